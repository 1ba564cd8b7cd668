// Settings of the sense-aware softmax (docs/design.md §2; names as the released options where
// they exist). The string values of the enums are the config's and options.json's.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sa {

struct SenseOptions {
  int n_context = 6;                          // rows per word; sense 0 is the warm-up sense
  int cluster_proj_dim = 16;                  // d' of the PCA space used for selection
  int pca_sample = 20000;                     // Q: queue of recent selection vectors
  int pca_every = 250;                        // M: steps between refits
  // Steps between pushes into the queue; 0: at refits only (released). 1 is Alg. 2's every step.
  int pca_push_every = 0;
  // A refit sees only vectors pushed in the last this many steps; 0: the queue size alone bounds it.
  int64_t pca_queue_steps = 0;
  double sense_learning_rate = 0.01;          // alpha of the center update
  double remove_less_freqent_contexts = 0.1;  // score below which a sense is removed
  int context_record_window = 100;            // selections remembered per word for pruning
  int64_t contextual_warmup = 20000;          // steps with sense 0 only
  int64_t prune_every = 20000;                // E
  int64_t prune_first = 60000;                // first pruning step
  // "paper" (Alg. 1's mean update) or "released" (the released code's decay).
  enum class CenterUpdate { Paper, Released, PerToken } center_update = CenterUpdate::Paper;
  // Negatives of the sampled softmax: uniform over enabled rows (released), log-uniform over words
  // with all their enabled senses (log-Q corrected), or the exact softmax.
  enum class Negatives { Uniform, LogUniform, Full } negatives = Negatives::Uniform;
  // How many log-uniform negatives a step draws: about n_negative_samples_batch "rows" (fewer
  // words as words gain senses), or n_negative_samples_batch "words", each with all its enabled
  // senses: as many words as ELMo's sampler draws, so both cover the same share of the vocabulary.
  enum class NegativeBudget { Rows, Words } negative_budget = NegativeBudget::Rows;
  // With the "words" budget: draw fewer words when they would bring more than about this many rows
  // (words x enabled senses per word); 0: no cap.
  int64_t negative_rows_max = 0;
  // Words seen fewer than this many times as training targets before the warm-up ends keep their
  // one trained sense (no split); 0 splits every word, as released.
  int64_t split_min_count = 0;
  // The output tables: "shared" by both directions (bilm-tf's ELMo) or one "per_direction"
  // (the released SaELMo). "default" is each model's own: shared for ELMo, per direction for
  // SaELMo. SaELMo's shared layout shares W and b; centers, projection, enabled scores and usage
  // windows stay per direction.
  enum class TableLayout { Default, Shared, PerDirection } softmax_tables = TableLayout::Default;
  // How senses 1.. start when the warm-up ends: random rows, copies of sense 0's rows, zero
  // centers (released at scale), or copies with centers seeded by the first contexts seen.
  enum class WarmupInit { Random, Copy, Zero, Data } warmup_init = WarmupInit::Random;
  // Subtracted before projecting, in selection (not released): nothing, the projection queue's
  // mean, or the target word's mean context (sense 0's center, kept up to date after the warm-up);
  // word_offset keeps each word's offset from its batch's mean context instead.
  enum class SelectionMean { None, Global, Word, WordOffset } selection_mean = SelectionMean::None;
  // Bi-SaELMo's translation candidates in the softmax: "all" senses of every dictionary
  // translation in every step (released; the ones not chosen are pushed down at full weight while
  // other rows are sampled at n_negatives / rows), or only the "best" one as the second target,
  // the others being ordinary rows that may be drawn as negatives (a sampled Eq. 6).
  enum class Translations { All, Best } translation_candidates = Translations::All;
  // Selection reads the top output after the output dropout (released) or before it (ours):
  // dropout noise is larger than what tells a word's senses apart.
  bool select_after_dropout = true;

  bool shared_tables() const {
    return softmax_tables == TableLayout::Shared || (softmax_tables == TableLayout::Default && n_context < 2);
  }
  int push_every() const { return pca_push_every > 0 ? pca_push_every : pca_every; }
  bool warmup_init_copy() const { return warmup_init == WarmupInit::Copy || warmup_init == WarmupInit::Data; }
  bool warmup_zero_centers() const { return warmup_init == WarmupInit::Zero || warmup_init == WarmupInit::Data; }
  bool seed_centers() const { return warmup_init == WarmupInit::Data; }
  bool word_means() const { return selection_mean == SelectionMean::Word || selection_mean == SelectionMean::WordOffset; }

  // Every setting once, by its config and options.json name: v(name, field) for each field in
  // order. Config parsing, `--set`, the config echo, options.json and from_json all walk this
  // list, so a setting is added here and nowhere else.
  template <typename Visit>
  void visit(Visit&& v);

  // Every setting (options.json's "sense" section); from_json fails naming `origin`. Settings an
  // older run's file lacks keep their defaults.
  nlohmann::json to_json() const;
  static SenseOptions from_json(const nlohmann::json& j, const std::string& origin);
};

template <typename Visit>
void SenseOptions::visit(Visit&& v) {
  v("n_context", n_context);
  v("cluster_proj_dim", cluster_proj_dim);
  v("pca_sample", pca_sample);
  v("pca_every", pca_every);
  v("pca_push_every", pca_push_every);
  v("pca_queue_steps", pca_queue_steps);
  v("sense_learning_rate", sense_learning_rate);
  v("remove_less_freqent_contexts", remove_less_freqent_contexts);
  v("context_record_window", context_record_window);
  v("contextual_warmup", contextual_warmup);
  v("prune_every", prune_every);
  v("prune_first", prune_first);
  v("center_update", center_update);
  v("sense_negatives", negatives);
  v("sense_negative_budget", negative_budget);
  v("sense_negative_rows_max", negative_rows_max);
  v("split_min_count", split_min_count);
  v("softmax_tables", softmax_tables);
  v("warmup_init", warmup_init);
  v("selection_mean", selection_mean);
  v("translation_candidates", translation_candidates);
  v("select_after_dropout", select_after_dropout);
}

// The names of an enum's values, in declaration order.
template <typename E>
const std::vector<std::string_view>& enum_names();

// The value named `name`; throws std::invalid_argument listing the valid names otherwise.
template <typename E>
E parse_enum(std::string_view name);

template <typename E>
std::string enum_name(E value) {
  return std::string(enum_names<E>()[static_cast<size_t>(value)]);
}

}  // namespace sa
