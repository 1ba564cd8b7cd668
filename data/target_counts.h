// How often each word has been a training target so far (both directions' batches), from the
// batches themselves: no second pass over the corpus, and a resumed run rebuilds it exactly while
// it replays its data stream. It gives the unigram mass of a step's negatives (what share of the
// text their words are: comparable between ELMo and SaELMo) and which words are rare
// (split_min_count).
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace sa {

struct NegativeCoverage {
  int words = 0;          // distinct words among the negatives
  double mass = 0;        // the sum of their unigram probabilities
};

class TargetCounts {
 public:
  explicit TargetCounts(int vocab) : counts_(static_cast<size_t>(vocab), 0) {}
  void add(const std::vector<int32_t>& targets);
  int64_t count(int32_t word) const { return counts_[static_cast<size_t>(word)]; }
  int64_t total() const { return total_; }
  // The distinct words of `words` (repeats count once) and their unigram mass.
  NegativeCoverage coverage(const std::vector<int32_t>& words) const;
  // The words seen fewer than `min_count` times, in id order.
  std::vector<int32_t> rarer_than(int64_t min_count) const;

 private:
  std::vector<int64_t> counts_;
  int64_t total_ = 0;
};

}  // namespace sa
