// The tokenization of our corpus scripts (data/scripts/handbook_corpus.py), in C++ for tools that
// read raw text (xling_eval's reviews and NLI sentences): a token is a run of word characters,
// joined through single -, ', ’ or . between word characters ("don't", "e-mail", "3.5"), or any
// other single non-space character. Word and space characters are Python's \w and \s, from the
// generated table data/unicode_classes.inc, so both give the same tokens.
//
// Chinese and Japanese: our bilingual corpora segment runs of CJK characters into dictionary words
// (data/scripts/segment_cjk.py: forward maximum matching, longest lexicon word first, a character
// in no word alone). With a CjkLexicon the tokenizer does the same, so text reaches a model in the
// tokens it was trained on.
#pragma once
#include <string>
#include <unordered_set>
#include <vector>

namespace sa {

class CjkLexicon {
 public:
  // Headwords, as segment_cjk.py reads them: CC-CEDICT's traditional and simplified forms (UTF-8),
  // EDICT's word and kana forms (EUC-JP), and the target words of a MUSE dictionary whose source
  // word's rank (order of first appearance) is outside [skip_lo, skip_hi) (held-out pairs).
  void add_cedict(const std::string& path);
  void add_edict(const std::string& path);
  void add_muse_targets(const std::string& path, int skip_lo, int skip_hi);
  // Keeps the words of 2..max_len characters that are all CJK; call after the add_* calls.
  void finish(int max_len = 8);
  bool contains(const std::string& word) const { return words_.count(word) > 0; }
  int max_len() const { return max_len_; }
  size_t size() const { return words_.size(); }

 private:
  std::unordered_set<std::string> words_;
  int max_len_ = 8;
};

std::vector<std::string> tokenize(const std::string& utf8, const CjkLexicon* lexicon = nullptr);
// Whether the text holds a Chinese or Japanese character (what a CjkLexicon segments).
bool has_cjk(const std::string& utf8);
// Text that comes split one character a token (PAN-X's zh and ja files): each run of tokens that
// are single CJK characters regrouped into the lexicon's words, longest first, as tokenize()
// segments raw text; other tokens stay as they are. `word_of[t]`: the word holding token t.
struct RegroupedTokens {
  std::vector<std::string> words;
  std::vector<int32_t> word_of;
};
RegroupedTokens regroup_cjk_characters(const std::vector<std::string>& tokens, const CjkLexicon& lexicon);
// Whether a token is one CJK character (what regroup_cjk_characters joins).
bool is_cjk_character(const std::string& token);

// Sentences: split after . ! ? 。 ！ ？ followed by white space, each tokenized; empty ones dropped.
std::vector<std::vector<std::string>> tokenize_sentences(const std::string& utf8, const CjkLexicon* lexicon = nullptr);

}  // namespace sa
