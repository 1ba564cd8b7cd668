// Define-by-run reverse-mode autodiff. Ops that see an input requiring a gradient append a node
// (inputs, outputs, and a backward closure written next to the op's forward) to a thread-local
// tape; backward() replays the tape in reverse creation order, which is a topological order.
#pragma once
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "engine/core/tensor.h"

namespace sa {

using BackwardFn = std::function<void(const std::vector<Tensor>& grad_outputs)>;

struct Node {
  const char* op;
  std::vector<Tensor> inputs;
  std::vector<Tensor> outputs;
  BackwardFn backward;
};

bool grad_enabled();

// Within a NoGrad scope, ops record nothing (inference, optimizer updates, evaluation).
class NoGrad {
 public:
  NoGrad();
  ~NoGrad();
  NoGrad(const NoGrad&) = delete;
  NoGrad& operator=(const NoGrad&) = delete;

 private:
  bool prev_;
};

// True when an op over `inputs` must be recorded.
bool any_requires_grad(std::initializer_list<Tensor> inputs);
bool any_requires_grad(const std::vector<Tensor>& inputs);

// Checks numerics of the outputs (when enabled), then records the node if any input needs a
// gradient; marks the outputs as requiring one. Ops call this once after computing their forward.
void record(const char* op, std::vector<Tensor> inputs, std::vector<Tensor> outputs, BackwardFn backward);

// Adds g to t's dense gradient. `owned`: g is a fresh tensor nobody else holds, so it may become
// the gradient itself instead of being copied.
void accumulate_grad(const Tensor& t, const Tensor& g, bool owned);
// Appends rows of a row-sparse gradient to table t.
void accumulate_sparse_grad(const Tensor& t, const Tensor& indices, const Tensor& rows);

// Runs the tape backward from `root` (seed: ones, or `seed` when given) and clears the tape.
void backward(const Tensor& root, const Tensor& seed = Tensor());
// Profiling: while a sink is set, backward() waits for the device around every node and adds its
// seconds to the sink under the node's op name (bench train --phases). nullptr turns it off.
using OpSeconds = std::vector<std::pair<std::string, double>>;
void profile_backward(OpSeconds* sink);
// The forward likewise: while a sink is set, every op waits for the device when it records and
// adds the seconds since the previous op (or since the sink was set) under its name, so host
// work between ops (batching, a host-side draw) is charged to the op after it.
void profile_forward(OpSeconds* sink);
void clear_tape();
size_t tape_size();

// NaN/Inf detection: when on, every op checks its outputs and every gradient it produces, and
// throws an Error naming the op and the phase. Forward outputs may hold -inf (masked logits are
// -inf by design); NaN and +inf there, and any non-finite gradient, are reported. Off by default
// (it synchronizes the GPU).
void set_check_numerics(bool on);
bool check_numerics();
void check_finite(const char* op, const char* what, const Tensor& t);

}  // namespace sa
