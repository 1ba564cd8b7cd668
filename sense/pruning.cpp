#include "sense/pruning.h"

#include <algorithm>

namespace sa {

void SenseUsage::record(const std::vector<int32_t>& rows, int C) {
  flush();
  for (int32_t r : rows) append(r, C);
}

void SenseUsage::append(int32_t row, int C) const {
  auto& w = log_[row / C];
  w.push_back(row);
  if (static_cast<int>(w.size()) > window_) w.pop_front();
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

const std::deque<int32_t>* SenseUsage::window_of(int word) const {
  flush();
  auto it = log_.find(word);
  return it == log_.end() ? nullptr : &it->second;
}

int SenseUsage::prune(SenseTable& t, double threshold) const {
  flush();
  const int C = t.n_context();
  int disabled = 0;
  for (const auto& [w, win] : log_) {
    if (static_cast<int>(win.size()) < window_) continue;  // rare words are never pruned
    std::vector<int> count(static_cast<size_t>(C), 0);
    for (int32_t r : win) ++count[static_cast<size_t>(r - w * C)];
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
  for (const auto& [w, win] : log_)
    for (size_t i = 0; i < win.size(); ++i) v[static_cast<size_t>(w) * window_ + i] = win[i];
  return Tensor::from(v, {vocab, window_});
}

void SenseUsage::restore(const Tensor& windows) {
  SA_CHECK(windows.rank() == 2 && windows.dim(1) == window_, "usage windows {} must be [vocab, {}]", describe(windows),
           window_);
  log_.clear(), pending_.clear();
  std::vector<double> v = windows.values();
  for (int64_t w = 0; w < windows.dim(0); ++w)
    for (int64_t i = 0; i < window_; ++i)
      if (int32_t r = static_cast<int32_t>(v[w * window_ + i]); r >= 0) log_[static_cast<int>(w)].push_back(r);
}

}  // namespace sa
