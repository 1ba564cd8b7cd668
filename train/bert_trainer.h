// bin/train's loop for BERT (model = "bert"): masked-LM pretraining as BERT's (data/mlm_batches.h
// for the data; AdamW without bias correction, eps 1e-6, weight decay 0.01 except LayerNorm
// parameters and biases; linear warm-up then linear decay to 0; global-norm clip). The run
// directory is also a Hugging Face directory: config.json, vocab.txt and model.safetensors are
// rewritten with every checkpoint, so BertForMaskedLM.from_pretrained(run_dir) loads it. Resume,
// metrics.jsonl, held-out MLM perplexity and the progress line are as for ELMo.
#pragma once
#include "train/config.h"
#include "train/trainer.h"

namespace sa {

TrainResult train_bert(const TrainConfig& config, int64_t max_new_steps = 0, bool quiet = false);

// The learning rate at `step` (1-based) of `total`: linear warm-up over warmup steps, then linear
// decay to 0 at `total`.
double bert_learning_rate(double peak, int64_t step, int64_t warmup, int64_t total);

}  // namespace sa
