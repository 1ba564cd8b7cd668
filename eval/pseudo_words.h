// The pseudo-word evaluation of sense selection: two words of about equal frequency are merged
// into one token "a_b" in the training text; a SaELMo model trained on it should select different
// senses for the two hidden words. Scored by purity and V-measure of the selected senses against
// the hidden word, per pair and direction, with the one-sense (majority) baseline.
#pragma once
#include <array>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "eval/clustering.h"
#include "sense/sense_model.h"

namespace sa {

using WordPairs = std::vector<std::pair<std::string, std::string>>;

// One pair per line, "a b"; blank lines are skipped; fails naming file and line otherwise.
WordPairs read_word_pairs(const std::string& path);
// Copies the sentences of `corpus` (a file or glob) to `out` with each pair word replaced by its
// pair's "a_b"; returns the number of occurrences replaced.
int64_t write_pseudo_corpus(const WordPairs& pairs, const std::string& corpus, const std::string& out);

struct PseudoEvalOptions {
  int max_sentences = 20000;
  bool stateful = false;  // carry LSTM states across batches, as training does (default: zero state)
  bool ceiling = false;   // also the separation ceiling of the selection vectors
};

struct PseudoPairResult {
  std::string name;             // "a_b"
  int n_a = 0, n_b = 0;         // occurrences of each hidden word in the evaluated text
  ClusterScores stored[2];      // per direction, selection with the stored means
  ClusterScores inference[2];   // per direction, with inference-mode word means (word-centred runs)
  std::map<int, std::vector<int>> forward_split;  // selected row -> counts of a and b (forward)
  SeparationCeiling ceiling[2], ceiling_projected[2];  // with options.ceiling
};

struct PseudoEvalResult {
  std::vector<PseudoPairResult> pairs;
  bool word_means = false;  // the run selects word-centred: the inference-mode scores are set
  // Means over pairs per direction: how far the stored word mean lies from the inference-mode one
  // after the projection, and the spread of the vectors around the latter.
  double offset[2] = {0, 0}, spread[2] = {0, 0};
};

PseudoEvalResult pseudo_eval(const SenseModel& model, const WordPairs& pairs, const std::string& corpus,
                             const PseudoEvalOptions& o);
// The per-pair table, the means and (with ceiling) the ceiling table, as bin/senses prints them.
void print_pseudo_eval(const PseudoEvalResult& r, int n_context, bool ceiling);

}  // namespace sa
