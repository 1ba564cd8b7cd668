// Wall time per phase of a training step (batch, forward, loss, backward, update, ...), for
// `bench train --phases`. When on, every mark first waits for the device, so each phase is charged
// for its own GPU work; that removes the overlap between host and device, so read the split from
// it, and the rate from a run without it.
#pragma once
#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "engine/engine.h"

namespace sa {

class StepPhases {
 public:
  StepPhases(bool on, Device dev) : on_(on), dev_(dev) {}
  bool on() const { return on_; }
  // Marks the start of a step's first phase.
  void start() {
    if (!on_) return;
    backend_uncounted(dev_).synchronize();
    last_ = std::chrono::steady_clock::now();
  }
  // Ends the phase that ran since the last mark, charging it to `name`.
  void mark(const char* name) {
    if (!on_) return;
    backend_uncounted(dev_).synchronize();
    const auto now = std::chrono::steady_clock::now();
    const double s = std::chrono::duration<double>(now - last_).count();
    last_ = now;
    for (auto& [n, total] : totals_)
      if (n == name) {
        total += s;
        return;
      }
    totals_.emplace_back(name, s);
  }
  // Forgets what was measured so far (the warm-up steps).
  void reset() {
    totals_.clear();
    backward_ops_.clear();
    forward_ops_.clear();
  }
  const std::vector<std::pair<std::string, double>>& totals() const { return totals_; }
  // The backward phase split by op (autograd's profile_backward): start before backward(), stop after.
  void profile_backward_ops(bool start) {
    if (on_) profile_backward(start ? &backward_ops_ : nullptr);
  }
  const OpSeconds& backward_ops() const { return backward_ops_; }
  // The forward and loss split by op (autograd's profile_forward): start after the batch phase's
  // mark, stop before the loss phase's.
  void profile_forward_ops(bool start) {
    if (on_) profile_forward(start ? &forward_ops_ : nullptr);
  }
  const OpSeconds& forward_ops() const { return forward_ops_; }

 private:
  bool on_;
  Device dev_;
  std::chrono::steady_clock::time_point last_;
  std::vector<std::pair<std::string, double>> totals_;
  OpSeconds backward_ops_, forward_ops_;
};

}  // namespace sa
