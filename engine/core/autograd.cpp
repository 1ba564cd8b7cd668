#include "engine/core/autograd.h"

#include <chrono>
#include <string_view>

#include "engine/backend.h"
#include "engine/core/error.h"

namespace sa {

namespace {
thread_local bool g_grad_enabled = true;
thread_local std::vector<Node> g_tape;
thread_local const char* g_current_op = nullptr;  // op whose backward is running
bool g_check_numerics = false;
OpSeconds* g_backward_profile = nullptr;
OpSeconds* g_forward_profile = nullptr;
std::chrono::steady_clock::time_point g_forward_last;  // the previous recorded op's end

// Adds seconds to the sink's entry for op.
void add_seconds(OpSeconds& sink, const char* op, double s) {
  for (auto& [name, total] : sink)
    if (name == op) {
      total += s;
      return;
    }
  sink.emplace_back(op, s);
}
}  // namespace

void profile_backward(OpSeconds* sink) { g_backward_profile = sink; }

void profile_forward(OpSeconds* sink) {
  g_forward_profile = sink;
  g_forward_last = std::chrono::steady_clock::now();
}

namespace {

// A node's backward; while profiling, timed with the device waited for on both sides.
void run_node_backward(Node& n, const std::vector<Tensor>& gouts) {
  if (!g_backward_profile) return n.backward(gouts);
  Backend& be = backend(n.outputs.empty() ? Device::cpu() : n.outputs[0].device());
  be.synchronize();
  const auto t0 = std::chrono::steady_clock::now();
  n.backward(gouts);
  be.synchronize();
  add_seconds(*g_backward_profile, n.op, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
}

}  // namespace

bool grad_enabled() { return g_grad_enabled; }
NoGrad::NoGrad() : prev_(g_grad_enabled) { g_grad_enabled = false; }
NoGrad::~NoGrad() { g_grad_enabled = prev_; }

bool any_requires_grad(std::initializer_list<Tensor> inputs) {
  if (!g_grad_enabled) return false;
  for (const Tensor& t : inputs)
    if (t.requires_grad()) return true;
  return false;
}

bool any_requires_grad(const std::vector<Tensor>& inputs) {
  if (!g_grad_enabled) return false;
  for (const Tensor& t : inputs)
    if (t.requires_grad()) return true;
  return false;
}

void set_check_numerics(bool on) { g_check_numerics = on; }
bool check_numerics() { return g_check_numerics; }

void check_finite(const char* op, const char* what, const Tensor& t) {
  if (!g_check_numerics || !t.defined() || !is_float(t.dtype())) return;
  int64_t bad = backend(t.device()).count_nonfinite(t, std::string_view(what) == "forward output");
  SA_CHECK(bad == 0, "numerics: op '{}' produced {} NaN/Inf value(s) of {} in its {} ({})", op, bad, t.numel(), what,
           describe(t));
}

void record(const char* op, std::vector<Tensor> inputs, std::vector<Tensor> outputs, BackwardFn backward) {
  if (g_forward_profile && !outputs.empty()) {
    backend(outputs[0].device()).synchronize();
    const auto now = std::chrono::steady_clock::now();
    add_seconds(*g_forward_profile, op, std::chrono::duration<double>(now - g_forward_last).count());
    g_forward_last = now;
  }
  for (const Tensor& o : outputs) check_finite(op, "forward output", o);
  if (!any_requires_grad(inputs)) return;
  for (Tensor& o : outputs)
    if (is_float(o.dtype())) o.impl()->requires_grad = true;
  g_tape.push_back(Node{op, std::move(inputs), std::move(outputs), std::move(backward)});
}

void accumulate_grad(const Tensor& t, const Tensor& g, bool owned) {
  if (!t.requires_grad() || !g.defined()) return;
  SA_CHECK(g.shape() == t.shape(), "autograd: op '{}' produced gradient {} for input {}",
           g_current_op ? g_current_op : "?", describe(g), describe(t));
  if (g_current_op) check_finite(g_current_op, "gradient", g);
  TensorImpl* impl = t.impl();
  if (!impl->grad) {
    impl->grad = (owned ? g : g.clone()).impl_ptr();
  } else {
    Tensor acc(impl->grad);
    backend(acc.device()).axpy(1.0, g, acc);
  }
}

void accumulate_sparse_grad(const Tensor& t, const Tensor& indices, const Tensor& rows) {
  if (!t.requires_grad()) return;
  if (g_current_op) check_finite(g_current_op, "sparse gradient", rows);
  t.impl()->sparse_grad.indices.push_back(indices);
  t.impl()->sparse_grad.rows.push_back(rows);
  t.impl()->sparse_grad.coalesced = false;
}

void backward(const Tensor& root, const Tensor& seed) {
  SA_CHECK(root.requires_grad(), "backward: {} does not depend on anything that requires a gradient",
           describe(root));
  Tensor s = seed.defined() ? seed : Tensor::full(root.shape(), 1.0, root.dtype(), root.device());
  accumulate_grad(root, s, !seed.defined());
  std::vector<Node> tape;
  tape.swap(g_tape);  // ops run by backward closures must not append to the tape being replayed
  NoGrad no_grad;
  for (size_t i = tape.size(); i-- > 0;) {
    Node& n = tape[i];
    std::vector<Tensor> gouts;
    bool any = false;
    for (const Tensor& o : n.outputs) {
      gouts.push_back(o.grad());
      any |= gouts.back().defined();
    }
    if (any) {
      g_current_op = n.op;
      try {
        run_node_backward(n, gouts);
      } catch (...) {
        g_current_op = nullptr;
        throw;
      }
      g_current_op = nullptr;
    }
    // Intermediate gradients are no longer needed once their producer has run.
    for (const Tensor& o : n.outputs) o.impl()->grad.reset();
    tape.pop_back();
  }
}

void clear_tape() { g_tape.clear(); }
size_t tape_size() { return g_tape.size(); }

}  // namespace sa
