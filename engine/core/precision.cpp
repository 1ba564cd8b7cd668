#include "engine/core/precision.h"

#include <atomic>

namespace sa {

namespace {
std::atomic<bool> bf16_on{false};
}

bool bf16_matmuls() { return bf16_on.load(std::memory_order_relaxed); }
void set_bf16_matmuls(bool on) { bf16_on.store(on, std::memory_order_relaxed); }

Tensor gemm_operand(const Tensor& x) { return bf16_matmuls() && x.dtype() == DType::F32 ? x.to(DType::BF16) : x; }

Tensor bf16_rounded(const Tensor& x) {
  return bf16_matmuls() && x.dtype() == DType::F32 ? x.to(DType::BF16).to(DType::F32) : x;
}

}  // namespace sa
