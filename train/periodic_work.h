// A sense model's host work that comes every few hundred steps rather than every step: projection
// refits (step 1 and every pca_every after it), the usage windows' flush on logging steps, and
// pruning. A timed run shorter than these periods measures a step without them (bench train says
// which of them its timed steps held).
#pragma once
#include <cstdint>
#include <string>

#include "train/config.h"

namespace sa {

struct PeriodicWork {
  int64_t refits = 0, flushes = 0, prunings = 0;
};

// What falls on steps [first, last] of a run of `c` (nothing for a model without senses).
PeriodicWork periodic_work(const TrainConfig& c, int64_t first, int64_t last);
// One line saying it for bench train ("" for a model without senses).
std::string periodic_work_line(const TrainConfig& c, int64_t first, int64_t last);

}  // namespace sa
