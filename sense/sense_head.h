// The SaELMo output layer of one direction (docs/design.md §2): a sense table, the PCA projection
// used for selection, and the usage windows used for pruning. A training step selects a sense for
// every target from the top-layer vector at the target's own position and computes the
// sense-aware sampled softmax (sense_direction_loss); after the optimizer step, after_step moves
// the chosen centers, records the selections and runs the schedule: projection refits, the end of
// the warm-up, pruning.
#pragma once
#include <random>
#include <string>

#include "data/lm_batches.h"
#include "data/safetensors.h"
#include "layers/elmo.h"
#include "sense/projection.h"
#include "sense/pruning.h"
#include "sense/sense_table.h"
#include "sense/translation.h"
#include "sense/working_table.h"

namespace sa {

struct SenseHead {
  SenseTable table;
  PcaProjection proj;
  SenseUsage usage;
  // The enabled rows as an i32 vector on the table's device, from which a training step draws its
  // uniform negatives there (ops::draw_distinct). Built on first use (one upload) and again after
  // the set changes: at the end of the warm-up and when pruning removes senses (after_step), and
  // on restore. Whatever else changes table.enabled must reset it.
  Tensor enabled_list;
  const Tensor& enabled_rows_on_device();
  // `n` distinct enabled rows (all of them when fewer), drawn on the table's device with `key`.
  Tensor uniform_negatives(int64_t n, uint64_t key) { return ops::draw_distinct(enabled_rows_on_device(), n, key); }
  // `first_sense_seed`: sense 0's rows start as ELMo's softmax rows of that seed (SenseTable).
  SenseHead(int vocab, const SenseOptions& o, int dim, uint64_t seed, Device dev, DType dt = DType::F32,
            TableShard shard = {}, std::optional<uint64_t> first_sense_seed = std::nullopt);

  // The trainable table, W and b, under `prefix`.
  std::vector<NamedTensor> params(const std::string& prefix);
  // The head's state beyond W and b (centers, enabled scores, projection and its queue, usage
  // windows) under `prefix`, for a checkpoint; restore reads it back.
  void save(std::vector<std::pair<std::string, Tensor>>& out, const std::string& prefix) const;
  void restore(const SafetensorsFile& f, const std::string& origin, const std::string& prefix, bool pca_fitted);
};

// Where direction d's head lives in a checkpoint: "sense/<d>/".
std::string sense_head_prefix(size_t d);

// Reads tensor `name` of a checkpoint into dst, which belongs to `param`: when param is a sharded
// head's W or b, only the rows its table stores.
void take_param(const SafetensorsFile& f, const std::string& origin, const std::string& name,
                const std::vector<SenseHead>& heads, const Tensor& param, Tensor& dst);

// Reads a trained model from a checkpoint: `params` by name (the biLM's and the heads' W and b)
// and each head's state under sense_head_prefix(d). The trainer's restore and load_sense_model
// both read through it.
void restore_trained_model(const SafetensorsFile& f, const std::string& origin, const std::vector<NamedTensor>& params,
                           std::vector<SenseHead>& heads);

// What one training step of a head selected, for after_step.
struct SenseStep {
  Tensor ctx;       // the selection vectors [B*T, P]
  Tensor selected;  // the chosen table row of each target, i32 [B*T] on ctx's device
  std::vector<int32_t> targets;
  std::vector<int32_t> negative_rows;  // the sampled negatives' table rows (global ids); empty: full softmax
  Tensor drawn_rows;                   // or, drawn on the device, those rows there (i32)
  // The negatives' rows wherever they were drawn: a host read for device draws (logging steps only).
  std::vector<int32_t> negatives() const;
  // How many negatives, read from the shapes alone (0: the full softmax).
  int64_t negative_count() const {
    return drawn_rows.defined() ? drawn_rows.numel() : static_cast<int64_t>(negative_rows.size());
  }
};

// The host reads a training step with sense heads still makes, and why (bench train prints it).
inline constexpr const char* kSenseScheduleHostReads =
    "none on most steps: the selections stay on the device and reach the usage windows in one read on logging "
    "steps; the projection reads its queued contexts on refit steps (every pca_every), pruning its windows, seeding "
    "(warmup_init = \"data\"), the translation loss and sharded tables the selections every step";

// What the schedule did at a step, for the log.
struct SenseEvents {
  bool warmup_ended = false;
  int pruned = -1;  // senses removed; -1 when the step does not prune
};

// The selection vectors (docs/design.md §2.2): ctx[:, t] = top[:, t+1] (the output after reading the target
// itself), the last position keeping top[:, T-1]; [B*T, P], cut from the tape.
Tensor selection_context(const Tensor& top);

// Mean sense-aware loss of one direction from its top output [B, T, P]. Training: sampled softmax
// over `n_negatives` uniform enabled rows, the step's selections going to `step` for after_step.
// Otherwise the exact softmax over the enabled rows. With `dict` (Bi-SaELMo), training adds the
// sense-level translation loss (sense/translation.h). `select_top`: the top output selection
// reads instead of `top` (select_after_dropout = false). With `work` (a sharded table), training
// reads the step's working table, its negatives and dictionary instead of the head's, and `step`
// gets that table's rows; evaluation of a sharded table is collective (sharded_word_nll).
// `ahead`: log-uniform words drawn before the step (sample_log_uniform_senses takes them).
Tensor sense_direction_loss(SenseHead& head, const Tensor& top, const LmBatch& b, const SenseOptions& o,
                            int n_negatives, bool training, std::mt19937_64& rng, SenseStep* step = nullptr,
                            const TranslationTable* dict = nullptr, const Tensor& select_top = Tensor(),
                            WorkingTable* work = nullptr, WordsDrawnAhead* ahead = nullptr);

// Everything a head does between training steps, in order: the center update and usage record of
// `s`; a projection refit on the first step and every pca_every steps after it (Alg. 2); the end
// of the warm-up at step contextual_warmup; pruning every prune_every steps from prune_first on.
// With `work`, `s` holds the working table's rows: its centers move and are written back. At the end
// of the warm-up, the words in `rare` keep their one sense (split_min_count).
SenseEvents after_step(SenseHead& head, const SenseOptions& o, int64_t step, const SenseStep& s,
                       WorkingTable* work = nullptr, const std::vector<int32_t>& rare = {});

}  // namespace sa
