// BERT and SaBERT's part of bin/train (model = "bert"): masked-LM pretraining as BERT's
// (data/mlm_batches.h for the data; AdamW without bias correction, eps 1e-6, weight decay 0.01
// except LayerNorm parameters and biases; linear warm-up then linear decay to 0; global-norm
// clip). The run directory is also a Hugging Face directory: config.json, vocab.txt and
// model.safetensors are rewritten with every checkpoint, so BertForMaskedLM.from_pretrained(run_dir)
// loads it. The loop (resume, metrics.jsonl, held-out MLM perplexity, progress) is train/train_loop.h.
#pragma once
#include <memory>
#include <string>

#include "train/config.h"
#include "train/train_loop.h"

namespace sa {

std::unique_ptr<ModelFamily> make_bert_family(const TrainConfig& config, TrainConfig& resolved, const RunOutput& out);

// The [bert] keys and the masked-LM settings; what BERT does not support yet.
void validate_bert_config(const TrainConfig& c, const ConfigCheck& checks);

// bin/export: the run's newest checkpoint as a Hugging Face directory (config.json,
// model.safetensors with the standard names, vocab.txt, tokenizer_config.json).
void export_bert_run(const std::string& run_dir, const std::string& out_dir);

// The learning rate at `step` (1-based) of `total`: linear warm-up over warmup steps, then linear
// decay to 0 at `total`.
double bert_learning_rate(double peak, int64_t step, int64_t warmup, int64_t total);

}  // namespace sa
