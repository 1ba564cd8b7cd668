// Anchors for projection alignment (docs/design.md §4.4): the average contextual
// vector of every word of a corpus, per biLM layer, in word2vec text files.
#pragma once
#include <string>
#include <unordered_map>
#include <vector>

#include "eval/alignment.h"
#include "layers/encoder.h"

namespace sa {

struct WordVectors {
  std::vector<std::string> words;
  Matrix vectors;  // one row per word
  int find(const std::string& w) const;  // -1 when absent

 private:
  mutable std::unordered_map<std::string, int> index_;  // built on the first find
};

// word2vec text format: "n d" header, then "word v1 ... vd"; errors name the file and line.
WordVectors read_word_vectors(const std::string& path);
void write_word_vectors(const WordVectors& v, const std::string& path);

struct AnchorOptions {
  int batch_size = 64;
  int min_count = 1;
  int64_t max_sentences = 0;  // 0 = all
  bool lowercase = false;
};

// Per layer 0..L (0 = token layer, fwd and bwd halves as in bilm-tf's output), the mean vector of
// each word over its occurrences in `corpus` (one tokenized sentence per line), stateless.
std::vector<WordVectors> average_anchors(const ContextualEncoder& encoder, const std::string& corpus, const AnchorOptions& o);

}  // namespace sa
