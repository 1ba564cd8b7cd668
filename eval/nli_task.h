// xling_eval xnli's data: premise and hypothesis tokenized as the encoder's training corpus was
// (data/tokenizer.h), labels entailment, neutral, contradiction (0, 1, 2).
#pragma once
#include <string>
#include <vector>

#include "data/nli_corpus.h"
#include "data/tokenizer.h"
#include "eval/xling_harness.h"
#include "layers/encoder.h"

namespace sa {

struct NliData {
  Sentences premises, hypotheses;
  std::vector<int32_t> labels;
  int unlabeled = 0;  // pairs without a gold label, left out
  int empty = 0;      // pairs with a side without a token, left out
};

// MultiNLI's .jsonl, or tab-separated pairs (SICK, XNLI, MultiNLI's .txt/.tsv).
NliSet read_nli_file(const std::string& path);
// `lexicon`: segment Chinese and Japanese as the bilingual corpora were (data/tokenizer.h).
NliData prepare_nli(const NliSet& set, const CjkLexicon* lexicon = nullptr);

// bin/xling_eval xnli: its subcommand, defaults, options and run (eval/xling_harness.h).
XlingTask nli_xling_task();

}  // namespace sa
