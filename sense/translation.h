// The sense-level translation loss (Bi-SaELMo; docs/design.md §4.3). Each target
// word with dictionary translations gets T x C translation-sense candidates; the one whose center
// is closest (cosine, in the source direction's projected space) to the token's selection vector
// becomes a second target with weight 1/2 in the same softmax. The other candidates stay in the
// denominator, and no candidate is also drawn as a negative. Masks are booleans (no -FLT_MAX sums).
#pragma once
#include <functional>
#include <vector>

#include "data/dictionary.h"
#include "sense/selection.h"
#include "sense/sense_softmax.h"
#include "sense/sense_table.h"

namespace sa {

struct TranslationCandidates {
  int per_token = 0;               // T * C
  std::vector<int32_t> rows;       // [N * per_token]; 0 where invalid
  std::vector<uint8_t> valid;      // [N * per_token]: an enabled sense of a translation
  std::vector<int32_t> best;       // [N]: index into the token's candidates, or -1 (no translation)
};

// Candidates of every token (target words `words`) from the translation table, and the best by
// cosine between ctx [N, P] and the candidates' centers, projected by proj [P, d]. Centred as
// selection is (selection_mean): the context subtracts mean_of(its word), each candidate center
// mean_of(its translation word); with "word" or "word_offset" the two sides are in their own
// word's frame, so the choice compares where a token lies among its word's contexts with where a
// translation sense lies among the translation's.
// `lang` (one per word, optional): each token's language, choosing its dictionary entries
// (TranslationTable::of).
TranslationCandidates translation_candidates(const SenseTable& table, const TranslationTable& dict,
                                             const std::vector<int32_t>& words, const Tensor& ctx, const Tensor& proj,
                                             const WordMeans& mean_of = {}, const std::vector<uint8_t>* lang = nullptr);

// translation_candidates = "best": only each token's best candidate stays valid, so the others
// leave the softmax and may be drawn as ordinary negatives.
void keep_best_only(TranslationCandidates& cand);

// Log-Q shifts added to the logits when the negatives are drawn log-uniformly (sense_negatives =
// "log_uniform"), as TF's sampled softmax subtracts log Q from true and sampled logits alike:
// `own` [N * (1 + T*C)] for each token's selected row then its candidates, `negatives` [S].
struct TranslationShifts {
  std::vector<double> own, negatives;
};
// The shifts of a log-uniform draw for these rows. `global_word` maps a word of `table` to the id
// the draw used (a working table's words; identity when empty).
TranslationShifts translation_shifts(const SenseNegatives& neg, const SenseTable& table,
                                     const std::vector<int32_t>& selected, const TranslationCandidates& cand,
                                     const std::function<int32_t(int32_t)>& global_word = {});

// Per-row loss [N]: soft-label cross entropy over [selected row | T*C candidates | negatives] with
// targets 1 on the selected row, or 1/2 and 1/2 on it and the best candidate. Negatives equal to
// the selected row or to any valid candidate of the row are masked. One fused op
// (ops::candidate_softmax with 1 + T*C own rows per token): no [N, S] logits in memory.
// `shifts` (optional): log-Q shifts of log-uniform negatives.
Tensor sense_translation_loss(const Tensor& x, const SenseTable& table, const std::vector<int32_t>& selected,
                              const TranslationCandidates& cand, const std::vector<int32_t>& negatives,
                              const TranslationShifts* shifts = nullptr);
// The same from plain ops (gathers, a GEMM, masks, soft cross entropy): the reference in tests.
Tensor sense_translation_loss_unfused(const Tensor& x, const SenseTable& table, const std::vector<int32_t>& selected,
                                      const TranslationCandidates& cand, const std::vector<int32_t>& negatives,
                                      const TranslationShifts* shifts = nullptr);

}  // namespace sa
