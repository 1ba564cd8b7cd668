// The bilm-tf vocabulary file: one token per line, <S> </S> <UNK> first, then by descending
// count. Word id = line index. It defines the softmax output space (inputs are characters).
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace sa {

class Vocab {
 public:
  // Reads `path`; fails naming the file when <S> or </S> (or <UNK>, when required) is missing or a
  // line is not valid UTF-8.
  static Vocab load(const std::string& path, bool require_unk = true);
  static Vocab from_words(std::vector<std::string> words);  // <S> </S> <UNK> must come first
  // Written atomically (temporary file, fsync, rename): a crash never leaves a cut vocabulary.
  void save(const std::string& path) const;
  // FNV-1a over the words in order: checkpoints record it, so a changed vocab.txt is caught.
  uint64_t checksum() const;

  int size() const { return static_cast<int>(words_.size()); }
  // Id of a word, or <UNK>'s id when absent.
  int id(const std::string& w) const;
  bool contains(const std::string& w) const { return index_.count(w) > 0; }
  const std::string& word(int i) const { return words_.at(static_cast<size_t>(i)); }
  int bos() const { return bos_; }
  int eos() const { return eos_; }
  int unk() const { return unk_; }

 private:
  std::vector<std::string> words_;
  std::unordered_map<std::string, int> index_;
  int bos_ = -1, eos_ = -1, unk_ = -1;
  void build(const std::string& origin, bool require_unk);
};

// Counts the tokens of the corpora (files or globs): <S> </S> <UNK> first, then words with at
// least min_count occurrences by descending count (ties alphabetically), at most max_size words
// in all (0: no limit).
Vocab build_vocab(const std::vector<std::string>& corpora, int min_count, int max_size, bool lowercase);

// True when s is valid UTF-8; otherwise `bad` gets the byte offset of the first invalid byte.
bool valid_utf8(const std::string& s, size_t* bad = nullptr);

// Throws "PATH:LINE: invalid UTF-8 at byte K" for the first invalid byte of `text`, which starts on
// line `first_line` of `path` and may span several lines.
void require_utf8(const std::string& text, const std::string& path, int first_line = 1);

}  // namespace sa
