#include "engine/core/precision.h"

#include <atomic>

#include "engine/backend.h"

namespace sa {

namespace {
std::atomic<bool> bf16_on{false};
}

bool bf16_matmuls() { return bf16_on.load(std::memory_order_relaxed); }
void set_bf16_matmuls(bool on) { bf16_on.store(on, std::memory_order_relaxed); }

Tensor gemm_operand(const Tensor& x) { return bf16_matmuls() && x.dtype() == DType::F32 ? x.to(DType::BF16) : x; }

// One kernel (the rounding as a unary op), not a cast to bf16 and back: two launches and a bf16
// temporary per operand.
Tensor bf16_rounded(const Tensor& x) {
  if (!bf16_matmuls() || x.dtype() != DType::F32) return x;
  Tensor out = Tensor::empty(x.shape(), DType::F32, x.device());
  backend(x.device()).unary(UnaryOp::RoundBf16, x, out, 0, 0);
  return out;
}

}  // namespace sa
