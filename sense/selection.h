// Sense selection (Alg. 1) and the online k-means center update. Selection is not differentiable:
// it picks, per token, the enabled sense of the target word whose projected center has the highest
// cosine with the projected context vector (ties: the lowest sense).
#pragma once
#include <functional>
#include <vector>

#include "sense/sense_table.h"

namespace sa {

// Contexts and candidate centers in the selection space: ctx [N, P] and the centers of `rows`
// ([N * K], K per context) projected by proj [P, d], after subtracting `mean` ([1, P], or [N, P]
// one per context and its K centers) when given. With `center_mean` ([N * K, P] or [1, P]) the
// centers subtract that instead: a translation's senses are centred on the translation's own mean.
// Shared by sense selection and the translation loss's choice of the best translation sense.
// With on_host = false only U and V are made, on the contexts' device (the selection kernel's input).
struct SelectionSpace {
  int64_t d = 0, per_context = 0;
  Tensor U, V;               // [N, d] projected contexts, [N * K, d] projected centers (their device)
  std::vector<double> u, v;  // the same on the host
  std::vector<double> center_sq;  // squared norms of the raw centers (0 = never seeded)
  SelectionSpace(const SenseTable& table, const Tensor& ctx, const std::vector<int32_t>& rows, const Tensor& proj,
                 const Tensor& mean, bool on_host = true, const Tensor& center_mean = Tensor());
  const double* context(int64_t n) const { return &u[static_cast<size_t>(n * d)]; }
  const double* center(int64_t n, int64_t j) const { return &v[static_cast<size_t>((n * per_context + j) * d)]; }
  // Cosine of context n with a projected vector w (a center, or another context).
  double cosine(int64_t n, const double* w) const;
};

// The n_context candidate rows of each word (w*C + s, word by word) and whether each is enabled:
// what the selection kernel (ops::select_rows) reads.
struct SenseCandidates {
  std::vector<int32_t> rows;
  std::vector<uint8_t> enabled;
};
SenseCandidates sense_candidates(const SenseTable& table, const std::vector<int32_t>& words);

// ctx [N, P] (any device), words [N] target word ids, proj [P, d]. Returns the selected rows
// w*C + s. A word with no enabled sense (pruning never allows it) falls back to its first sense.
// With `mean` [1, P], it is subtracted from contexts and centers before projecting (an option:
// the released code projects raw vectors). With `seed_empty`, an enabled sense whose center is
// exactly zero is taken by the next occurrence of its word (online k-means seeded by its first
// points, warmup_init = "data"); later occurrences in the same call compare with that context.
std::vector<int32_t> select_senses(const SenseTable& table, const Tensor& ctx, const std::vector<int32_t>& words,
                                   const Tensor& proj, const Tensor& mean = Tensor(), bool seed_empty = false);
// select_senses without seeding, left on the contexts' device: i32 [N], never read by the host
// (a training step keeps it there for the loss and the center update).
Tensor select_sense_rows(const SenseTable& table, const Tensor& ctx, const std::vector<int32_t>& words,
                         const Tensor& proj, const Tensor& mean = Tensor());
// An i32 tensor of row ids read into a host vector (one host read).
std::vector<int32_t> host_rows(const Tensor& rows);

// What selection subtracts before projecting (selection_mean in the config): nothing (released),
// the projection queue's mean ("global"), each target word's mean context ("word": the center of
// its sense 0, the warm-up sense, which update_sense_centers goes on updating after the warm-up), or
// that mean kept relative to the batch ("word_offset": sense 0's center holds the word's offset
// from the mean of its batch's contexts, and `batch_mean` [1, P], the mean of the contexts being
// selected now, is added back). The representation drifts as a whole during training, by more
// than a word's spread within a few hundred steps, which a stored absolute mean cannot follow.
Tensor selection_mean(const SenseTable& table, const SenseOptions& o, const Tensor& queue_mean,
                      const std::vector<int32_t>& words, const Tensor& batch_mean = Tensor());
// selection_mean of any list of words, bound to a step's table, options and means; returns an
// undefined tensor when nothing is subtracted.
using WordMeans = std::function<Tensor(const std::vector<int32_t>& words)>;
// The center updates of one training step: the selected rows move toward their contexts
// (update_centers), and with selection_mean "word" or "word_offset" sense 0's centers keep the
// words' means (after the warm-up) or offsets from the batch mean (from the start; sense 0's
// center then holds only the offset, also during the warm-up).
void update_sense_centers(SenseTable& table, const SenseOptions& o, const Tensor& ctx, const Tensor& selected,
                          const std::vector<int32_t>& words);
void update_sense_centers(SenseTable& table, const SenseOptions& o, const Tensor& ctx,
                          const std::vector<int32_t>& selected, const std::vector<int32_t>& words);

// Moves the centers toward the context vectors assigned to them this step.
//  paper:    only selected rows: c <- (1 - a) c + a * mean(ctx assigned to c)
//  released: every row decays, c <- (1 - a) c, and selected rows add a * sum / (count + 1e-5)
// With seed_exact (warmup_init = "data"), a center that is still exactly zero takes the mean of
// its contexts instead (its first points set it, as online k-means seeds). With spare_sense0 the
// released decay leaves every word's sense-0 row alone (it holds a word mean, not a cluster).
// `rows` i32 [N] on any device; only seed_exact reads anything back to the host.
void update_centers(SenseTable& table, const Tensor& ctx, const Tensor& rows, double a, SenseOptions::CenterUpdate mode,
                    bool seed_exact = false, bool spare_sense0 = false);
void update_centers(SenseTable& table, const Tensor& ctx, const std::vector<int32_t>& rows, double a,
                    SenseOptions::CenterUpdate mode, bool seed_exact = false, bool spare_sense0 = false);

}  // namespace sa
