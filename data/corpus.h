// Tokenized corpora: one sentence per line, whitespace-separated tokens, UTF-8, in one file or
// many shards named by a glob. Only one shard is in memory at a time.
#pragma once
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace sa {

using Sentence = std::vector<std::string>;

// The files a pattern names (a plain path or a glob), sorted; fails when there are none.
std::vector<std::string> expand_glob(const std::string& pattern);

// Fails with "PATH: is a directory, not a file": a directory opens as a stream that reads nothing
// (and pugixml reports it as a failed allocation), so its errors would blame the content.
void check_not_directory(const std::string& path);

// The tokens of a line: its runs of anything but the C locale's whitespace (space, tab, LF, VT,
// FF, CR), as `>>` splits them. Training, embedding and the task readers split alike.
Sentence split_tokens(const std::string& line);

// The corpus option `lowercase`: ASCII letters only, as bilm-tf's training data was prepared.
void lowercase_ascii(std::string& s);

// The sentences of one file; blank lines are skipped, CRLF line ends are accepted. Invalid UTF-8 is
// an error naming the file, line and byte. `lowercase` lowercases ASCII letters.
std::vector<Sentence> read_sentences(const std::string& path, bool lowercase);

// Streams the sentences of all shards forever: shards in a random order without replacement
// (reshuffled when all were used), sentences shuffled within each shard (bilm-tf's LMDataset).
class ShardedCorpus {
 public:
  ShardedCorpus(const std::string& pattern, uint64_t seed, bool lowercase, bool shuffle = true);
  // Bilingual mixing (bilm-tf's bilingual dataset): each next sentence comes from this corpus with
  // probability `ratio`, else from `other` (l1_sample_ratio).
  void mix_with(std::unique_ptr<ShardedCorpus> other, double ratio);
  const Sentence& next();
  // The language of the sentence next() returned last: 0 this corpus's, 1 the mixed-in one's.
  int last_language() const { return last_language_; }
  // Passes over all shards so far (0 during the first).
  int64_t epoch() const { return epoch_; }

 private:
  void load_next_shard();
  std::string pattern_;  // for errors
  std::vector<std::string> files_;
  std::vector<size_t> order_;
  size_t next_file_ = 0;
  std::vector<Sentence> shard_;
  size_t next_sentence_ = 0;
  std::mt19937_64 rng_;
  bool lowercase_, shuffle_;
  int64_t epoch_ = 0;
  std::unique_ptr<ShardedCorpus> other_;
  double ratio_ = 1.0;
  int last_language_ = 0;
};

// Tokens (with </S>: one per sentence) over all shards.
int64_t count_tokens(const std::string& pattern, bool lowercase);

}  // namespace sa
