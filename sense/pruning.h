// Dynamic pruning (docs/design.md §2.9, the released rule): each word keeps a window of its last W
// selections; at a check, every sense of a word with a full window whose share is <= 1% has its
// score halved, and a score below the threshold disables the sense; a share above 1% resets the
// score to 1. A word never loses all its senses.
#pragma once
#include <vector>

#include "sense/sense_table.h"

namespace sa {

class SenseUsage {
 public:
  explicit SenseUsage(int window = 100) : window_(window) {}
  // Records the selected rows of one step (word = row / C).
  void record(const std::vector<int32_t>& rows, int n_context);
  // The same for rows left on a device (i32 [N]): kept there until a reader needs the windows
  // (prune, window_of, to_tensor), flush, or kMaxPendingSteps steps wait; then all of them come
  // to the host in one read, in order. A training step thus never waits for its selections.
  void record(const Tensor& rows, int n_context);
  void flush() const;
  // Applies the rule to `table`; returns the number of senses disabled by this check.
  int prune(SenseTable& table, double threshold) const;
  // The word's window, oldest selection first (empty: never selected).
  std::vector<int32_t> window_of(int word) const;
  // How often each of the word's `n_context` senses is in its window (they sum to its length).
  std::vector<int> sense_counts(int word, int n_context) const;
  // For checkpoints: the windows as i32 [vocab, window], -1 where a window is not full.
  Tensor to_tensor(int vocab) const;
  void restore(const Tensor& windows);

 private:
  void append(int32_t row, int n_context) const { push(row / n_context, row); }
  void push(int word, int32_t row) const;
  int ring_of(int word) const;  // the word's ring, -1: never selected
  template <class F>
  void for_each_in(int ring, F f) const;  // f(row) for ring's entries, oldest first
  std::vector<int> counts_in(int ring, int word, int n_context) const;

  static constexpr size_t kMaxPendingSteps = 1000;  // ~20 MB of i32 rows at 5k targets a step
  int window_;
  // The windows are complete whenever read: const readers flush what is pending into them. Each
  // selected word has a ring of `window_` rows in one flat array, so recording a selection is an
  // index and a store (a step records 2 x 5,120; a map of deques took three times as long).
  mutable std::vector<int32_t> word_ring_;            // word -> its ring, -1: none yet
  mutable std::vector<int32_t> word_of_;              // ring -> word
  mutable std::vector<int32_t> rings_;                // ring k at [k * window_, (k + 1) * window_)
  mutable std::vector<int32_t> oldest_, held_;        // per ring: the oldest entry's place, entries held
  mutable std::vector<Tensor> pending_;
  mutable int pending_context_ = 0;
};

}  // namespace sa
