// bin/train's one training loop, for every model family: the step loop, progress lines (tokens/s,
// steps done/total, ETA, smoothed loss), metrics.jsonl's loss lines, held-out cadence and
// checkpoint cadence. A family (train/families.h lists them) implements ModelFamily: its data,
// its state and checkpoint schema, one step's work, its held-out score and its exports.
#pragma once
#include <cstdint>
#include <cstdio>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "engine/backend.h"
#include "engine/core/device_counters.h"
#include "sense/sense_head.h"
#include "train/config.h"
#include "train/run_session.h"
#include "train/step_phases.h"

namespace sa {

struct TrainOptions {
  int64_t max_new_steps = 0;  // > 0: stop after that many steps of this invocation (benchmarks)
  bool quiet = false;
  bool time_phases = false;   // wait for the device between a step's phases to time them (bench train --phases)
  std::function<void(int64_t step)> after_step = nullptr;  // called after each step (bench memory samples memory)
};

struct TrainResult {
  int64_t steps_done = 0;
  int stopped_by = 0;  // the signal (SIGTERM, SIGINT) that ended the run early, after a checkpoint
  double last_loss = 0;
  double heldout_perplexity = 0;  // 0 when no held-out data
  double tokens_per_s = 0;         // over every step of this invocation
  double steady_tokens_per_s = 0;  // after the first 5 steps (allocation warm-up excluded)
  double steady_seconds = 0;       // wall time of those steps
  int64_t encoded_tokens = 0;      // distinct tokens through the char CNN in those steps (ELMo)
  double softmax_rows = 0;         // the sampled softmax's candidate rows per direction, summed over those steps
  // Seconds per step phase over the steps after the first 5, when asked for (time_phases).
  std::vector<std::pair<std::string, double>> phase_seconds;
  std::vector<std::pair<std::string, double>> backward_op_seconds;  // the backward phase by op
  std::vector<std::pair<std::string, double>> forward_op_seconds;   // the forward and loss phases by op
  // Host reads, uploads and launches over the steps after the first 5 (with their logging,
  // held-out and checkpoint work), and how many steps that was.
  DeviceCounters steady_counters;
  int64_t steady_steps = 0;
  std::string host_reads_why;  // the family's host_reads_per_step()
  std::string replay;          // the family's replay_summary()
};

// Where a family reports what happens during training: metrics.jsonl (the rank that owns the run
// directory) and the console (unless quiet).
struct RunOutput {
  RunSession* session = nullptr;  // null on data-parallel ranks other than 0
  bool quiet = false;
  void log(const nlohmann::json& j) const {
    if (session) session->log(j);
  }
  int64_t tokens_before() const { return session ? session->tokens_before() : 0; }
};

// A run's `precision` while it lives (the backend and the engine setting are shared with whatever
// runs next): "tf32" puts CUDA's f32 matrix products on TF32 tensor cores, "bf16" rounds every
// matrix product's operands to bf16 (engine/core/precision.h; on the CPU too, so its effect on
// training shows there). Says which once unless quiet.
struct PrecisionScope {
  Device dev;
  PrecisionScope(Device d, const std::string& precision, bool quiet) : dev(d) {
    backend_uncounted(dev).set_tf32(precision == "tf32");
    set_bf16_matmuls(precision == "bf16");
    if (quiet) return;
    if (precision == "tf32" && dev.is_cuda()) std::printf("matrix products on %s: TF32 tensor cores\n", dev.str().c_str());
    if (precision == "bf16")
      std::printf("matrix products on %s: bf16 operands, f32 accumulation (weights, softmax and loss in f32)\n",
                  dev.str().c_str());
  }
  ~PrecisionScope() {
    backend_uncounted(dev).set_tf32(false);
    set_bf16_matmuls(false);
  }
};

// What one training step did.
struct StepStats {
  Tensor loss;                 // the global batch's mean loss, a scalar on the device (read on logging steps)
  int64_t tokens = 0;          // tokens of the global batch (ELMo: batch x unroll x ranks; BERT: pieces)
  int64_t encoded_tokens = 0;  // distinct tokens through the char CNN (ELMo)
  double softmax_rows = 0;     // candidate rows of the sampled softmax per direction (ELMo: negatives; SaELMo: sense rows)
};

class ModelFamily {
 public:
  virtual ~ModelFamily() = default;
  virtual int64_t step() const = 0;         // steps done (restored from the newest checkpoint)
  virtual int64_t total_steps() const = 0;
  virtual Device device() const = 0;
  // Reads the next batch, advances step() by one and trains on it. Marks its phases in `phases`.
  virtual StepStats train_step(StepPhases& phases) = 0;
  // Keys the loss lines of metrics.jsonl add on logging steps (negative coverage, learning rate).
  virtual nlohmann::json step_metrics() const { return nlohmann::json::object(); }
  // Whether this process scores held-out text, and the score (the perplexity of the family's loss).
  virtual bool scores_heldout() const = 0;
  virtual double heldout_perplexity() = 0;
  // Writes the checkpoint of step() and the family's exports, and prunes old checkpoints.
  virtual void save() = 0;
  // What the console calls the loss ("loss", "MLM loss").
  virtual const char* loss_name() const { return "loss"; }
  // What to try when the loss is not finite.
  virtual const char* divergence_hint() const { return "lower learning_rate?"; }
  // The host reads a step still makes between logging steps and why (bench train prints it);
  // empty when it makes none.
  virtual std::string host_reads_per_step() const { return ""; }
  // With SA_STEP_REPLAY=1: how many steps replayed a captured one, or why none could.
  virtual std::string replay_summary() const { return ""; }
};

// Runs `family` from its step() to its total_steps() (or opts.max_new_steps more). The host reads
// the loss only on the steps that log it, score held-out text or save a checkpoint (and the last):
// a diverged run stops there, before a checkpoint can hold it. The console also gets a line after a
// slow first step and whenever 30 s passed without one, so a big model on the CPU shows its rate
// and ETA within the first minute. After a stop signal (train/stop_signal.h) the step in progress
// ends, a checkpoint is written and the run returns with stopped_by set.
TrainResult run_training(ModelFamily& family, const TrainConfig& c, const RunOutput& out, const TrainOptions& opts,
                         StepPhases& phases);

// Prints (and logs, for pruning) what a step's sense schedule did: the end of the warm-up, with
// `note` after it, and the senses pruning removed.
void report_sense_events(const RunOutput& out, int64_t step, const SenseOptions& o, SenseEvents ev,
                         const std::string& note = "");


}  // namespace sa
