// BERT's text pipeline, as Hugging Face's BertTokenizer does it: the basic tokenizer (drop control
// characters, white space to spaces, CJK ideographs as tokens of their own, NFC, optional
// lowercasing with accent stripping after NFD, punctuation split) and greedy longest-match-first
// WordPiece over a vocab.txt ("##" marks a piece that continues a word; a word with a part no
// piece matches, or over 100 characters, is one [UNK]). Unicode properties come from utf8proc.
#pragma once
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace sa {

struct BasicTokenizerOptions {
  bool lowercase = true;
  // Accents are stripped when lowercasing unless this says otherwise (BERT's strip_accents).
  std::optional<bool> strip_accents;
  bool split_cjk = true;  // tokenize_chinese_chars
  bool strips_accents() const { return strip_accents.value_or(lowercase); }
};

// Words of `text` (UTF-8; invalid bytes fail naming `origin`).
std::vector<std::string> bert_basic_tokenize(const std::string& text, const BasicTokenizerOptions& o = {},
                                             const std::string& origin = "text");

class WordPieceVocab {
 public:
  // Hugging Face's vocab.txt: one piece per line, id = line index. Fails naming the file and line
  // for an empty or duplicate entry, and when [UNK] is missing.
  static WordPieceVocab load(const std::string& path);
  // Pieces in id order; [UNK] must be among them.
  static WordPieceVocab from_pieces(std::vector<std::string> pieces, const std::string& origin = "vocabulary");
  void save(const std::string& path) const;  // atomically

  int size() const { return static_cast<int>(pieces_.size()); }
  int id(const std::string& piece) const;  // -1 when absent
  const std::string& piece(int i) const { return pieces_.at(static_cast<size_t>(i)); }
  int unk() const { return unk_; }
  // [PAD] [CLS] [SEP] [MASK]: -1 when the vocabulary lacks one (the model code needs them).
  int pad() const { return id("[PAD]"); }
  int cls() const { return id("[CLS]"); }
  int sep() const { return id("[SEP]"); }
  int mask() const { return id("[MASK]"); }

 private:
  std::vector<std::string> pieces_;
  std::unordered_map<std::string, int> index_;
  int unk_ = -1;
};

// The piece ids of one basic-tokenized word.
std::vector<int> wordpiece_ids(const std::string& word, const WordPieceVocab& vocab, int max_chars = 100);

// Text to piece ids, keeping which input word each piece came from (bin/embed gives one vector per
// word: the mean of its pieces, or the first).
struct WordPieces {
  std::vector<int> ids;
  std::vector<int> word_of;  // [ids.size()]: index of the word in the input
};

class WordPieceTokenizer {
 public:
  WordPieceTokenizer(WordPieceVocab vocab, BasicTokenizerOptions o = {}) : vocab_(std::move(vocab)), o_(o) {}
  // Raw text: basic tokenization, then WordPiece.
  std::vector<int> encode(const std::string& text) const;
  // Words already split (a corpus line, an evaluation sentence): each goes through the basic
  // tokenizer too (punctuation inside a word splits it), then WordPiece.
  WordPieces encode_words(const std::vector<std::string>& words) const;
  std::vector<std::string> pieces(const std::string& text) const;
  const WordPieceVocab& vocab() const { return vocab_; }
  const BasicTokenizerOptions& options() const { return o_; }

 private:
  WordPieceVocab vocab_;
  BasicTokenizerOptions o_;
};

}  // namespace sa
