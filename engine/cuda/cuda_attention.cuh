// What the attention kernels share: the problem's shape, dropout's keep factor (the CPU's draw),
// and the tensor-core kernels' entry points. Included only by engine/cuda/cuda_attention*.cu.
#pragma once
#include "engine/core/philox.h"
#include "engine/cuda/cuda_common.cuh"

namespace sa::cudak {

struct AttnShape {
  int64_t H, T, d;
  double scale, p;
  uint64_t seed, offset;
};

// The dropout factor of element (bh, i, j): 0 or 1 / (1 - p), the CPU's draw.
template <typename T>
__device__ __forceinline__ T keep_factor(const AttnShape& s, int64_t bh, int64_t i, int64_t j) {
  if (s.p == 0) return T(1);
  const uint64_t e = static_cast<uint64_t>((bh * s.T + i) * s.T + j);
  return philox_uniform(s.seed, s.offset + e) < static_cast<float>(s.p) ? T(0) : T(1) / (T(1) - T(s.p));
}

// Calls f(j, keep) for each j of score row r (stream values offset + r * T + j; keep as
// keep_factor gives it), the calling thread's share of the row: one Philox draw serves four
// elements, where keep_factor draws a block per element. Each j once, in no particular order.
template <typename T, typename F>
__device__ __forceinline__ void for_row_keeps(const AttnShape& s, int64_t r, F&& f) {
  if (s.p == 0) {
    for (int64_t j = threadIdx.x; j < s.T; j += blockDim.x) f(j, T(1));
    return;
  }
  const uint64_t base = s.offset + static_cast<uint64_t>(r * s.T), last = (base + s.T - 1) >> 2;
  const float p = static_cast<float>(s.p);
  const T keep = T(1) / (T(1) - T(s.p));
  for (uint64_t q = (base >> 2) + threadIdx.x; q <= last; q += blockDim.x)
    philox_block_uniforms(s.seed, base, static_cast<uint64_t>(s.T), q,
                          [&](uint64_t j, float u) { f(static_cast<int64_t>(j), u < p ? T(0) : keep); });
}

// The tensor-core kernels (bf16 or TF32 operands, f32 accumulation; head size <= 128, compute
// >= 8.0): the fused path for f32 tensors under precision = "bf16" or "tf32". Under bf16 they
// round where the batched-GEMM path and the CPU round: q, k, v and gout, the dropped
// probabilities before P v and P^T gout, and dS before its two products; under TF32 the same
// operands go to the tensor cores with 10 bits of mantissa.
enum class TcOperands { Bf16, Tf32 };
bool attention_tc_supported(int64_t d, TcOperands ops);
void attention_forward_tc(TcOperands ops, cudaStream_t stream, const float* q, const float* k, const float* v,
                          const uint8_t* mask, const AttnShape& s, int64_t heads, float* out, float* lse);
// delta[row] = gout[row] . out[row], computed by the caller.
void attention_backward_tc(TcOperands ops, cudaStream_t stream, const float* q, const float* k, const float* v,
                           const uint8_t* mask, const float* lse, const float* delta, const float* gout,
                           const AttnShape& s, int64_t heads, float* gq, float* gk, float* gv);

}  // namespace sa::cudak
