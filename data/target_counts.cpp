#include "data/target_counts.h"

#include "engine/core/error.h"

namespace sa {

void TargetCounts::add(const std::vector<int32_t>& targets) {
  for (int32_t w : targets) {
    SA_CHECK(w >= 0 && static_cast<size_t>(w) < counts_.size(), "target word {} outside the vocabulary of {}", w,
             counts_.size());
    ++counts_[static_cast<size_t>(w)];
  }
  total_ += static_cast<int64_t>(targets.size());
}

NegativeCoverage TargetCounts::coverage(const std::vector<int32_t>& words) const {
  std::vector<bool> seen(counts_.size(), false);
  NegativeCoverage c;
  int64_t sum = 0;
  for (int32_t w : words)
    if (!seen[static_cast<size_t>(w)]) {
      seen[static_cast<size_t>(w)] = true;
      ++c.words;
      sum += counts_[static_cast<size_t>(w)];
    }
  c.mass = total_ > 0 ? static_cast<double>(sum) / static_cast<double>(total_) : 0.0;
  return c;
}

std::vector<int32_t> TargetCounts::rarer_than(int64_t min_count) const {
  std::vector<int32_t> out;
  for (size_t w = 0; w < counts_.size(); ++w)
    if (counts_[w] < min_count) out.push_back(static_cast<int32_t>(w));
  return out;
}

}  // namespace sa
