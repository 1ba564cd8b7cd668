#include "train/periodic_work.h"

#include <algorithm>
#include <fmt/format.h>

namespace sa {

namespace {

// How many steps s in [first, last] have s >= from and (s - offset) % every == 0.
int64_t count_on(int64_t first, int64_t last, int64_t every, int64_t offset, int64_t from = 0) {
  first = std::max(first, from);
  if (every <= 0 || last < first) return 0;
  auto upto = [&](int64_t s) { return s < offset ? 0 : (s - offset) / every + 1; };  // steps offset, offset+every, ... <= s
  return upto(last) - upto(first - 1);
}

}  // namespace

PeriodicWork periodic_work(const TrainConfig& c, int64_t first, int64_t last) {
  PeriodicWork w;
  if (c.sense.n_context < 2) return w;
  w.refits = count_on(first, last, c.sense.pca_every, 1);
  w.flushes = count_on(first, last, c.log_every, c.log_every);
  w.prunings = count_on(first, last, c.sense.prune_every, c.sense.prune_every, c.sense.prune_first);
  return w;
}

std::string periodic_work_line(const TrainConfig& c, int64_t first, int64_t last) {
  if (c.sense.n_context < 2) return "";
  const PeriodicWork w = periodic_work(c, first, last);
  return fmt::format(
      "  periodic sense work in the timed steps: {} projection refits (every {} steps), {} usage-window flushes (every "
      "{}), {} prunings (every {} from step {}){}",
      w.refits, c.sense.pca_every, w.flushes, c.log_every, w.prunings, c.sense.prune_every, c.sense.prune_first,
      w.refits == 0 || w.flushes == 0 ? "; time more steps to count them" : "");
}

}  // namespace sa
