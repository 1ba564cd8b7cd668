// bin/train's loop for ELMo: the run directory (resolved config.cfg, options.json, vocab.txt,
// metrics.jsonl, checkpoints/), resume by rerunning the same command, progress lines and
// held-out perplexity with the full softmax.
#pragma once
#include <string>

#include "train/config.h"

namespace sa {

struct TrainResult {
  int64_t steps_done = 0;
  double last_loss = 0;
  double heldout_perplexity = 0;  // 0 when no held-out data
  double tokens_per_s = 0;         // over every step of this invocation
  double steady_tokens_per_s = 0;  // after the first 5 steps (allocation warm-up excluded)
  int64_t encoded_tokens = 0;      // distinct tokens through the char CNN in those steps (ELMo)
  // Seconds per step phase over the steps after the first 5, when asked for (time_phases).
  std::vector<std::pair<std::string, double>> phase_seconds;
  std::vector<std::pair<std::string, double>> backward_op_seconds;  // the backward phase by op
};

// Trains (or resumes) the run that `config` describes. `max_new_steps` > 0 stops early after that
// many steps of this invocation (benchmarks); checkpoints and metrics are still written.
// `time_phases` waits for the device between the phases of each step to time them (benchmarks).
TrainResult train_elmo(const TrainConfig& config, int64_t max_new_steps = 0, bool quiet = false,
                       bool time_phases = false);

}  // namespace sa
