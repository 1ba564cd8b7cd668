// Natural language inference pairs: SICK, XNLI's TSV, and MultiNLI as JSON lines or TSV. Labels
// are entailment, neutral or contradiction; MultiNLI's "-" (no gold label) is left out and counted.
#pragma once
#include <string>
#include <vector>

namespace sa {

enum class NliLabel { Entailment = 0, Neutral = 1, Contradiction = 2 };

struct NliPair {
  std::string premise, hypothesis;
  NliLabel label;
};

struct NliSet {
  std::vector<NliPair> pairs;
  int unlabeled = 0;  // rows without a gold label ("-"), left out
};

// Tab-separated pairs. With a header row, the columns are found by name (sentence1 or premise or
// sentence_A; sentence2 or hypothesis or sentence_B; gold_label or label or entailment_judgment):
// SICK, MultiNLI's .txt/.tsv and XNLI's official .tsv. Without one, the columns are premise,
// hypothesis, label. Labels in any case. Fails naming file and line for a short row or an unknown
// label.
NliSet read_nli_tsv(const std::string& path);
// MultiNLI's .jsonl: one object per line with sentence1, sentence2 and gold_label.
NliSet read_nli_jsonl(const std::string& path);

}  // namespace sa
