// precision = "bf16": every matrix product of the ops (matmul, bmm, linear, the LSTM's GEMMs)
// takes both operands rounded to bf16 and accumulates and returns f32, as cuBLAS's bf16 GEMM does;
// weights, gradients, softmaxes and losses stay f32. The CPU rounds at the same points (its bf16
// GEMM widens the rounded operands exactly), so a CPU run shows what bf16 does to training.
// Process-wide, not per thread: the LSTM's directions run on worker threads.
#pragma once
#include "engine/core/tensor.h"

namespace sa {

bool bf16_matmuls();
void set_bf16_matmuls(bool on);

// The operand a GEMM takes: x rounded to bf16 while bf16_matmuls() is on and x is f32, else x.
Tensor gemm_operand(const Tensor& x);
// The same values kept in f32, for a kernel that does its products itself (the char CNN's
// convolution): its f32 products of rounded operands equal a bf16 GEMM's up to summation order.
Tensor bf16_rounded(const Tensor& x);

}  // namespace sa
