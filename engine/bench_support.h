// Baselines for bin/bench: the raw BLAS/cuBLAS call of a GEMM shape, timed on the same device,
// so the engine's overhead over the library can be measured. No CUDA header here.
#pragma once
#include "engine/core/device.h"

namespace sa {

// Seconds per call of a plain row-major f32 GEMM [m,k]x[k,n] through the device's BLAS, averaged
// over `iters` calls after one warm-up call; on a GPU with `tf32`, cuBLAS's TF32 tensor-core math
// (what a run with precision tf32 or bf16 gets from its f32 products), else its plain f32 math.
double raw_gemm_seconds(Device d, int64_t m, int64_t n, int64_t k, int iters, bool tf32 = false);

namespace cuda {
double raw_gemm_seconds(int device, int64_t m, int64_t n, int64_t k, int iters, bool tf32);
// The same product [m,k]x[k,n] (B transposed where trans_b: stored [n,k]) with TF32 tensor-core
// math, through cuBLAS's plain call (first) and its strided-batched call with one item (second).
struct GemmPairSeconds {
  double plain, batched;
};
GemmPairSeconds raw_tf32_gemm_plain_vs_batched(int device, int64_t m, int64_t n, int64_t k, bool trans_b, int iters);
}

}  // namespace sa
