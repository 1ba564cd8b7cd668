#include "engine/core/precision.h"

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <exception>
#include <string>

#include "engine/backend.h"
#include "engine/core/error.h"

namespace sa {

namespace {
std::atomic<bool> bf16_on{false};
std::atomic<Bf16WeightCopies*> open_copies{nullptr};
}

bool bf16_matmuls() { return bf16_on.load(std::memory_order_relaxed); }
void set_bf16_matmuls(bool on) { bf16_on.store(on, std::memory_order_relaxed); }

// The result may be a weight's copy that other products share: read it, never write into it.
Tensor gemm_operand(const Tensor& x) {
  if (!bf16_matmuls() || x.dtype() != DType::F32) return x;
  if (Bf16WeightCopies* c = open_copies.load(std::memory_order_acquire))
    if (Tensor copy = c->find(x); copy.defined()) return copy;
  return x.to(DType::BF16);
}

Bf16WeightCopies::Bf16WeightCopies(const std::vector<Tensor>& weights, std::vector<char>& wanted) {
  const char* mode = std::getenv("SA_BF16_WEIGHT_COPIES");
  if (!bf16_matmuls() || (mode && std::string(mode) == "0") || weights.empty() || open_copies.load() != nullptr) return;
  if (wanted.size() != weights.size()) wanted.assign(weights.size(), 0);  // a new list: learn it anew
  wanted_ = &wanted;
  weights_ = weights;
  copies_.resize(weights.size());
  taken_.assign(weights.size(), 0);
  std::vector<Tensor> from, to;
  for (size_t i = 0; i < weights.size(); ++i)
    if (wanted[i] && weights[i].defined() && weights[i].dtype() == DType::F32) {
      copies_[i] = Tensor::empty(weights[i].shape(), DType::BF16, weights[i].device());
      from.push_back(weights[i]);
      to.push_back(copies_[i]);
    }
  // One primitive per device (a model's weights share one).
  for (size_t i = 0; i < from.size();) {
    size_t j = i;
    while (j < from.size() && from[j].device() == from[i].device()) ++j;
    backend(from[i].device())
        .multi_cast({from.begin() + static_cast<std::ptrdiff_t>(i), from.begin() + static_cast<std::ptrdiff_t>(j)},
                    {to.begin() + static_cast<std::ptrdiff_t>(i), to.begin() + static_cast<std::ptrdiff_t>(j)});
    i = j;
  }
  // Published last: a failure above leaves no open scope behind, and a reader finds it complete.
  Bf16WeightCopies* none = nullptr;
  open_ = true;  // before a reader can find it
  if (!open_copies.compare_exchange_strong(none, this, std::memory_order_acq_rel)) open_ = false;
}

void Bf16WeightCopies::close() {
  if (!open_) return;
  open_copies.store(nullptr, std::memory_order_release);
  std::lock_guard<std::mutex> lock(mu_);  // after a find that loaded the pointer just before
  open_ = false;
  *wanted_ = taken_;  // the next step copies at once what this one took
  // SA_BF16_WEIGHT_COPIES=verify (tests): every copy a product took still equals its weight
  // rounded now, so nothing wrote a weight while the scope was open.
  const char* mode = std::getenv("SA_BF16_WEIGHT_COPIES");
  const bool verify = mode && std::string(mode) == "verify" && std::uncaught_exceptions() == 0;  // not while unwinding
  for (size_t i = 0; verify && i < weights_.size(); ++i)
    SA_CHECK(!taken_[i] || copies_[i].values() == weights_[i].to(DType::BF16).values(),
             "Bf16WeightCopies: weight {} ({}) changed while its bf16 copy was in use", i, describe(weights_[i]));
  weights_.clear();
  copies_.clear();
}

Tensor Bf16WeightCopies::find(const Tensor& x) {
  const TensorImpl& xi = *x.impl();
  std::lock_guard<std::mutex> lock(mu_);
  if (!open_) return Tensor();
  for (size_t i = 0; i < weights_.size(); ++i) {
    const Tensor& w = weights_[i];
    if (!w.defined()) continue;
    const TensorImpl& wi = *w.impl();
    if (wi.storage != xi.storage || w.dtype() != DType::F32 || xi.offset < wi.offset ||
        xi.offset + x.nbytes() > wi.offset + w.nbytes())
      continue;
    if (4 * x.numel() < w.numel()) return Tensor();  // a few rows of a large table
    if (!copies_[i].defined()) copies_[i] = w.to(DType::BF16);
    taken_[i] = 1;
    auto view = std::make_shared<TensorImpl>();
    view->storage = copies_[i].impl()->storage;
    view->offset = copies_[i].impl()->offset + (xi.offset - wi.offset) / 2;  // f32 bytes -> bf16 bytes
    view->shape = x.shape();
    view->dtype = DType::BF16;
    return Tensor(view);
  }
  return Tensor();
}

// One kernel (the rounding as a unary op), not a cast to bf16 and back: two launches and a bf16
// temporary per operand.
Tensor bf16_rounded(const Tensor& x) {
  if (!bf16_matmuls() || x.dtype() != DType::F32) return x;
  Tensor out = Tensor::empty(x.shape(), DType::F32, x.device());
  backend(x.device()).unary(UnaryOp::RoundBf16, x, out, 0, 0);
  return out;
}

}  // namespace sa
