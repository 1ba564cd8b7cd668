// ELMo and SaELMo's part of bin/train (model = "elmo"): the run directory (resolved config.cfg,
// options.json, vocab.txt, checkpoints/, weights.hdf5 for bilm-tf), data-parallel ranks, the
// bidirectional step with the sampled or sense-aware softmax, and held-out perplexity with the
// full softmax. The loop itself is train/train_loop.h.
#pragma once
#include <memory>
#include <string>

#include "train/config.h"
#include "train/train_loop.h"

namespace sa {

// Builds (or restores from the newest checkpoint) the run that `config` describes. `resolved` is
// the config as the run directory records it (n_train_tokens counted).
std::unique_ptr<ModelFamily> make_elmo_family(const TrainConfig& config, TrainConfig& resolved, const RunOutput& out);

// The steps a run takes: n_steps, or n_epochs over the resolved n_train_tokens (config.cfg's)
// in steps of batch x unroll x ranks tokens.
int64_t elmo_total_steps(const TrainConfig& resolved, int ranks);

// The [char_cnn] and [lstm] keys.
void validate_elmo_config(const TrainConfig& c, const ConfigCheck& checks);

// bin/export: the run's newest checkpoint as a bilm-tf/AllenNLP bundle (options.json with
// n_characters = 262 for inference, weights.hdf5 with bilm-tf's dataset names, vocab.txt).
void export_elmo_run(const std::string& run_dir, const std::string& out_dir);

}  // namespace sa
