// The sense-aware softmax (the paper's Eq. 3 with sampling, docs/design.md §2.8): the target is the selected sense row;
// negatives are drawn uniformly without replacement from the enabled sense rows; only the selected
// row is masked as an accidental hit (other senses of the word stay negatives, as released).
#pragma once
#include <random>
#include <vector>

#include "layers/softmax.h"
#include "sense/sense_table.h"

namespace sa {

// `n` distinct enabled rows, uniformly (all of them when fewer are enabled): the draw that
// ops::draw_distinct makes on the device from the same list with the key rng() gives.
std::vector<int32_t> sample_enabled_rows(const SenseTable& table, int n, std::mt19937_64& rng);

// Negatives `sense_negatives = "log_uniform"`: distinct words drawn by bilm-tf's log-uniform sampler
// over the frequency-sorted vocabulary, each with all its enabled senses; about n rows (budget
// Rows) or n words (budget Words, at most about `max_rows` rows when max_rows > 0). The
// log-Q shifts (-log expected count of the word) go with the candidates and, for `targets`, with
// the true rows, as in TF's sampled softmax.
struct SenseNegatives {
  std::vector<int32_t> rows;
  std::vector<double> shift, true_shift;  // empty for uniform negatives
  // The draw behind the log-uniform shifts, so rows other than the targets (the translation
  // loss's candidates) get theirs: vocabulary size, distinct words drawn, and the tries it took.
  int64_t vocab = 0;
  int words = 0;
  int64_t tries = 0;
  bool shifted() const { return !shift.empty(); }
  // -log(expected count) of word `w` (a global word id) in this draw.
  double word_shift(int32_t w) const;
};
// A step's log-uniform words drawn before the step (a trainer's read-ahead thread), with the
// targets' shifts, from the generator state the step's own draw starts from.
struct WordsDrawnAhead {
  SampledCandidates draw;
  int64_t vocab = 0;  // the words drawn from
  std::mt19937_64 rng_before, rng_after;
  bool taken = false;  // set where the step took them
};
WordsDrawnAhead draw_words_ahead(int64_t vocab, int words, std::mt19937_64& rng);
// With `ahead`, the draw takes its words where they are what `rng` would draw now (the same
// generator state and count of words, which follows the enabled senses: a step that enabled or
// pruned some in between makes the draw anew) and moves rng past them: the same bits either way.
SenseNegatives sample_log_uniform_senses(const SenseTable& table, int n, const std::vector<int32_t>& targets,
                                         std::mt19937_64& rng,
                                         SenseOptions::NegativeBudget budget = SenseOptions::NegativeBudget::Rows,
                                         int64_t max_rows = 0, WordsDrawnAhead* ahead = nullptr);
// How many words such a draw takes from a table with `enabled` enabled rows over `vocab` words.
int log_uniform_words(int64_t vocab, int64_t enabled, int n, SenseOptions::NegativeBudget budget, int64_t max_rows);

// Per-row loss [N] of x [N, P] with target rows `selected`, against the sampled `negatives`.
Tensor sense_sampled_loss(const Tensor& x, const SenseTable& table, const std::vector<int32_t>& selected,
                          const std::vector<int32_t>& negatives);
Tensor sense_sampled_loss(const Tensor& x, const SenseTable& table, const std::vector<int32_t>& selected,
                          const SenseNegatives& negatives);
// The same with `selected` i32 [N] on x's device (select_sense_rows).
Tensor sense_sampled_loss(const Tensor& x, const SenseTable& table, const Tensor& selected,
                          const SenseNegatives& negatives);
// Uniform negatives drawn on the device (i32 rows there, ops::draw_distinct).
Tensor sense_sampled_loss(const Tensor& x, const SenseTable& table, const Tensor& selected, const Tensor& negatives);

// Selection (Alg. 1, no seeding) and sense_sampled_loss with uniform `negatives` as one op
// (ops::select_candidate_softmax): ctx [N, P] the selection vectors, words [N], proj and mean as
// select_senses. Returns the per-row loss and the selected rows, equal to select_senses followed
// by sense_sampled_loss (a test), without bringing the selection space or the choice to the host.
struct SelectedLoss {
  Tensor per_row;
  Tensor selected;  // i32 [N] on x's device
};
// `negatives`: the sampled rows as an i32 vector on x's device (drawn there: ops::draw_distinct).
SelectedLoss select_and_sampled_loss(const Tensor& x, const SenseTable& table, const Tensor& ctx,
                                     const std::vector<int32_t>& words, const Tensor& proj, const Tensor& mean,
                                     const Tensor& negatives);

// Per-row loss [N] with the exact softmax over every enabled sense row (SaBERT's "full" softmax),
// through the fused candidate softmax: no [N, rows] logits. Disabled rows get probability 0 and
// no gradient.
Tensor sense_full_loss(const Tensor& x, const SenseTable& table, const Tensor& selected);
Tensor sense_full_loss(const Tensor& x, const SenseTable& table, const std::vector<int32_t>& selected);
// -log p(w) per row [N] for target words `words`, where p(w) = sum of p(w, s) over w's enabled
// senses: the model's word probability, on ELMo's scale (held-out perplexity). The normalizer
// runs over the enabled rows in chunks (`rows_per_chunk`, 0: about 4M logits a chunk), never
// building all [N, V*C] logits. No gradient.
Tensor sense_word_nll(const Tensor& x, const SenseTable& table, const std::vector<int32_t>& words,
                      int64_t rows_per_chunk = 0);
// sense_word_nll of a sharded table (collective: every rank passes the same x and words): each
// rank sums over the rows it stores, the partial normalizers are added in rank order, and the
// words' own senses come through a WorkingTable.
Tensor sharded_word_nll(const Tensor& x, const SenseTable& shard, const std::vector<int32_t>& words,
                        int64_t rows_per_chunk = 0);

}  // namespace sa
