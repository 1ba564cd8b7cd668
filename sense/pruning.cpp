#include "sense/pruning.h"

#include <algorithm>

namespace sa {

void SenseUsage::record(const std::vector<int32_t>& rows, int C) {
  flush();
  for (int32_t r : rows) append(r, C);
}

void SenseUsage::push(int word, int32_t row) const {
  if (word >= static_cast<int>(word_ring_.size())) word_ring_.resize(static_cast<size_t>(word) + 1, -1);
  int32_t& k = word_ring_[static_cast<size_t>(word)];
  if (k < 0) {
    k = static_cast<int32_t>(word_of_.size());
    word_of_.push_back(word), oldest_.push_back(0), held_.push_back(0);
    rings_.resize(rings_.size() + static_cast<size_t>(window_));
  }
  const size_t first = static_cast<size_t>(k) * window_;
  int32_t &oldest = oldest_[static_cast<size_t>(k)], &held = held_[static_cast<size_t>(k)];
  if (held < window_) {
    rings_[first + static_cast<size_t>((oldest + held++) % window_)] = row;
  } else {  // full: the newest takes the oldest's place
    rings_[first + static_cast<size_t>(oldest)] = row;
    oldest = (oldest + 1) % window_;
  }
}

template <class F>
void SenseUsage::for_each_in(int k, F f) const {
  const size_t first = static_cast<size_t>(k) * window_;
  for (int i = 0; i < held_[static_cast<size_t>(k)]; ++i)
    f(rings_[first + static_cast<size_t>((oldest_[static_cast<size_t>(k)] + i) % window_)]);
}

void SenseUsage::record(const Tensor& rows, int C) {
  SA_CHECK(pending_.empty() || C == pending_context_, "usage: rows recorded with {} senses a word, then {}",
           pending_context_, C);
  pending_.push_back(rows), pending_context_ = C;
  if (pending_.size() >= kMaxPendingSteps) flush();
}

void SenseUsage::flush() const {
  if (pending_.empty()) return;
  const std::vector<Tensor> steps = std::move(pending_);
  pending_.clear();
  NoGrad ng;
  const std::vector<double> all = (steps.size() == 1 ? steps[0] : ops::concat(steps, 0)).values();
  for (double r : all) append(static_cast<int32_t>(r), pending_context_);
}

int SenseUsage::ring_of(int word) const {
  return word >= 0 && word < static_cast<int>(word_ring_.size()) ? word_ring_[static_cast<size_t>(word)] : -1;
}

std::vector<int> SenseUsage::counts_in(int k, int word, int C) const {
  std::vector<int> count(static_cast<size_t>(C), 0);
  if (k >= 0) for_each_in(k, [&](int32_t r) { ++count[static_cast<size_t>(r - word * C)]; });
  return count;
}

std::vector<int32_t> SenseUsage::window_of(int word) const {
  flush();
  std::vector<int32_t> out;
  if (const int k = ring_of(word); k >= 0) for_each_in(k, [&](int32_t r) { out.push_back(r); });
  return out;
}

std::vector<int> SenseUsage::sense_counts(int word, int C) const {
  flush();
  return counts_in(ring_of(word), word, C);
}

int SenseUsage::prune(SenseTable& t, double threshold) const {
  flush();
  const int C = t.n_context();
  int disabled = 0;
  for (int k = 0; k < static_cast<int>(word_of_.size()); ++k) {
    if (held_[static_cast<size_t>(k)] < window_) continue;  // rare words are never pruned
    const int w = word_of_[static_cast<size_t>(k)];
    const std::vector<int> count = counts_in(k, w, C);
    std::vector<float> next(static_cast<size_t>(C));
    for (int s = 0; s < C; ++s) {
      const float score = t.enabled[static_cast<size_t>(t.row(w, s))];
      const double ratio = count[s] / (window_ + 1e-5);
      // A removed sense stays removed. The released rule would reset it to 1 when the window still
      // holds its old selections: the warm-up sense 0 of a word seen less than a window's worth
      // since the switch (it never happens at the released 20000/60000 schedule, but does with
      // short ones, and revives sense 0 with its stale center).
      float v = score <= 1e-6f ? 0.f : ratio <= 0.01 ? score * 0.5f : 1.f;
      next[s] = v < threshold ? 0.f : v;
    }
    // Guard: keep the most used sense that was enabled when a word would lose them all (a window
    // filled during warm-up can otherwise disable every real sense).
    if (std::none_of(next.begin(), next.end(), [](float v) { return v > 1e-6f; })) {
      int keep = -1;
      for (int s = 0; s < C; ++s)
        if (t.is_enabled(t.row(w, s)) && (keep < 0 || count[s] > count[keep])) keep = s;
      if (keep >= 0) next[keep] = t.enabled[static_cast<size_t>(t.row(w, keep))];
    }
    for (int s = 0; s < C; ++s) {
      float& cur = t.enabled[static_cast<size_t>(t.row(w, s))];
      if (cur > 1e-6f && next[s] <= 1e-6f) ++disabled;
      cur = next[s];
    }
  }
  return disabled;
}

Tensor SenseUsage::to_tensor(int vocab) const {
  flush();
  std::vector<int32_t> v(static_cast<size_t>(vocab) * window_, -1);
  for (int k = 0; k < static_cast<int>(word_of_.size()); ++k) {
    int32_t* out = &v[static_cast<size_t>(word_of_[static_cast<size_t>(k)]) * window_];
    for_each_in(k, [&](int32_t r) { *out++ = r; });
  }
  return Tensor::from(v, {vocab, window_});
}

void SenseUsage::restore(const Tensor& windows) {
  SA_CHECK(windows.rank() == 2 && windows.dim(1) == window_, "usage windows {} must be [vocab, {}]", describe(windows),
           window_);
  word_ring_.clear(), word_of_.clear(), rings_.clear(), oldest_.clear(), held_.clear(), pending_.clear();
  std::vector<double> v = windows.values();
  for (int64_t w = 0; w < windows.dim(0); ++w)
    for (int64_t i = 0; i < window_; ++i)
      if (int32_t r = static_cast<int32_t>(v[w * window_ + i]); r >= 0) push(static_cast<int>(w), r);
}

}  // namespace sa
