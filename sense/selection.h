// Sense selection (Alg. 1) and the online k-means center update. Selection is not differentiable:
// it picks, per token, the enabled sense of the target word whose projected center has the highest
// cosine with the projected context vector (ties: the lowest sense).
#pragma once
#include <vector>

#include "sense/sense_table.h"

namespace sa {

// ctx [N, P] (any device), words [N] target word ids, proj [P, d]. Returns the selected rows
// w*C + s. A word with no enabled sense (pruning never allows it) falls back to its first sense.
// With `mean` [1, P], it is subtracted from contexts and centers before projecting (an option:
// the released code projects raw vectors). With `seed_empty`, an enabled sense whose center is
// exactly zero is taken by the next occurrence of its word (online k-means seeded by its first
// points, warmup_init = "data"); later occurrences in the same call compare with that context.
std::vector<int32_t> select_senses(const SenseTable& table, const Tensor& ctx, const std::vector<int32_t>& words,
                                   const Tensor& proj, const Tensor& mean = Tensor(), bool seed_empty = false);

// Moves the centers toward the context vectors assigned to them this step.
//  paper:    only selected rows: c <- (1 - a) c + a * mean(ctx assigned to c)
//  released: every row decays, c <- (1 - a) c, and selected rows add a * sum / (count + 1e-5)
void update_centers(SenseTable& table, const Tensor& ctx, const std::vector<int32_t>& rows, double a,
                    SenseOptions::CenterUpdate mode);

}  // namespace sa
