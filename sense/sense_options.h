// Settings of the sense-aware softmax (method.md Part 1, decisions 2-7; names as the released
// options where they exist).
#pragma once
#include <cstdint>

namespace sa {

struct SenseOptions {
  int n_context = 6;                          // rows per word; sense 0 is the warm-up sense
  int cluster_proj_dim = 16;                  // d' of the PCA space used for selection
  int pca_sample = 20000;                     // Q: queue of recent selection vectors
  int pca_every = 250;                        // M: steps between refits
  double sense_learning_rate = 0.01;          // alpha of the center update
  double remove_less_freqent_contexts = 0.1;  // score below which a sense is removed
  int context_record_window = 100;            // selections remembered per word for pruning
  int64_t contextual_warmup = 20000;          // steps with sense 0 only
  int64_t prune_every = 20000;                // E
  int64_t prune_first = 60000;                // first pruning step
  enum class CenterUpdate { Paper, Released } center_update = CenterUpdate::Paper;
  // Negatives of the sampled softmax (decision 6): uniform over enabled rows (released), log-uniform
  // over words with all their enabled senses (log-Q corrected), or the exact softmax.
  enum class Negatives { Uniform, LogUniform, Full } negatives = Negatives::Uniform;
  bool warmup_init_copy = false;              // new senses start from sense 0's rows
  bool warmup_zero_centers = false;           // new senses' centers start at zero (released at scale)
  bool seed_centers = false;                  // empty centers are seeded by contexts (warmup_init = data)
  // Subtracted before projecting, in selection (not released): nothing, the projection queue's
  // mean, or the target word's mean context (sense 0's center, kept up to date after the warm-up).
  enum class SelectionMean { None, Global, Word, WordOffset } selection_mean = SelectionMean::None;
  // Selection reads the top output after the output dropout (released) or before it (ours):
  // dropout noise is larger than what tells a word's senses apart.
  bool select_after_dropout = true;
};

}  // namespace sa
