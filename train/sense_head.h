// The SaELMo output layer of one direction (method.md Part 2 §2): a sense table, the PCA projection
// used for selection, and the usage windows used for pruning. Each step selects a sense for every
// target from the top-layer vector at the target's own position, computes the sense-aware sampled
// softmax, moves the chosen centers and records the selections.
#pragma once
#include <random>

#include "data/lm_batches.h"
#include "sense/projection.h"
#include "sense/pruning.h"
#include "sense/sense_table.h"
#include "sense/translation.h"

namespace sa {

struct SenseHead {
  SenseTable table;
  PcaProjection proj;
  SenseUsage usage;
  SenseHead(int vocab, const SenseOptions& o, int dim, uint64_t seed, Device dev);
};

// The selection vectors (§2.2): ctx[:, t] = top[:, t+1] (the output after reading the target
// itself), the last position keeping top[:, T-1]; [B*T, P], cut from the tape.
Tensor selection_context(const Tensor& top);

// Mean sense-aware loss of one direction from its top output [B, T, P]. Training: sampled softmax
// over `n_negatives` uniform enabled rows, then the center update and usage record. Otherwise the
// exact softmax over the enabled rows. `ctx_out` gets the selection vectors (for the PCA queue).
// With `dict` (Bi-SaELMo), training adds the sense-level translation loss (sense/translation.h).
// `select_top`: the top output selection reads instead of `top` (select_after_dropout = false).
Tensor sense_direction_loss(SenseHead& head, const Tensor& top, const LmBatch& b, const SenseOptions& o,
                            int n_negatives, bool training, std::mt19937_64& rng, Tensor* ctx_out = nullptr,
                            const TranslationTable* dict = nullptr, const Tensor& select_top = Tensor());

}  // namespace sa
