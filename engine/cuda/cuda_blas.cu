// CUDA GEMM through cuBLAS. Our tensors are row-major, cuBLAS is column-major: a row-major X is
// a column-major X^T, so C = op(A) op(B) is computed as C^T = op(B)^T op(A)^T.
#include "engine/cuda/cuda_backend.cuh"

namespace sa {


void CudaBackend::gemm(const GemmArgs& g, const Tensor& a, const Tensor& b, Tensor& c) {
  const cublasOperation_t oa = g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, ob = g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int m = static_cast<int>(g.m), n = static_cast<int>(g.n), k = static_cast<int>(g.k);
  const int lda = g.trans_a ? m : k, ldb = g.trans_b ? k : n, ldc = n;
  const int batch = static_cast<int>(g.batch);
  if (a.dtype() == DType::BF16) {
    if (b.dtype() != DType::BF16 || c.dtype() != DType::F32)
      fail_message("gemm: bf16 GEMMs take bf16 operands and write f32");
    const float alpha = static_cast<float>(g.alpha), beta = static_cast<float>(g.beta);
    CUBLAS_CHECK(cublasGemmStridedBatchedEx(blas(), ob, oa, n, m, k, &alpha, b.raw(), CUDA_R_16BF, ldb, g.stride_b,
                                            a.raw(), CUDA_R_16BF, lda, g.stride_a, &beta, c.raw(), CUDA_R_32F, ldc,
                                            g.stride_c, batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    return;
  }
  if (a.dtype() != b.dtype() || a.dtype() != c.dtype()) fail_message("gemm: operands of different dtypes");
  if (a.dtype() == DType::F32) {
    const float alpha = static_cast<float>(g.alpha), beta = static_cast<float>(g.beta);
    CUBLAS_CHECK(cublasSgemmStridedBatched(blas(), ob, oa, n, m, k, &alpha, b.data<float>(), ldb, g.stride_b,
                                           a.data<float>(), lda, g.stride_a, &beta, c.data<float>(), ldc, g.stride_c,
                                           batch));
  } else if (a.dtype() == DType::F64) {
    CUBLAS_CHECK(cublasDgemmStridedBatched(blas(), ob, oa, n, m, k, &g.alpha, b.data<double>(), ldb, g.stride_b,
                                           a.data<double>(), lda, g.stride_a, &g.beta, c.data<double>(), ldc,
                                           g.stride_c, batch));
  } else {
    fail_message("gemm: dtype not supported on CUDA");
  }
}

}  // namespace sa

#include "engine/bench_support.h"

namespace sa::cuda {

namespace {
// Seconds per call of `call` on the backend's stream, over `iters` calls after one warm-up call.
template <class F>
double seconds_per_call(CudaBackend& be, int iters, F call) {
  call();
  cudaEvent_t e0, e1;
  CUDA_CHECK(cudaEventCreate(&e0));
  CUDA_CHECK(cudaEventCreate(&e1));
  CUDA_CHECK(cudaEventRecord(e0, be.stream()));
  for (int i = 0; i < iters; ++i) call();
  CUDA_CHECK(cudaEventRecord(e1, be.stream()));
  CUDA_CHECK(cudaEventSynchronize(e1));
  float ms = 0;
  CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  return ms / 1e3 / iters;
}

// Zeroed device buffers for a, b and c of an [m,k]x[k,n] product, freed on scope exit.
struct GemmBuffers {
  float *a = nullptr, *b = nullptr, *c = nullptr;
  GemmBuffers(int64_t m, int64_t n, int64_t k) {
    CUDA_CHECK(cudaMalloc(&a, sizeof(float) * m * k));
    CUDA_CHECK(cudaMalloc(&b, sizeof(float) * k * n));
    CUDA_CHECK(cudaMalloc(&c, sizeof(float) * m * n));
    CUDA_CHECK(cudaMemset(a, 0, sizeof(float) * m * k));
    CUDA_CHECK(cudaMemset(b, 0, sizeof(float) * k * n));
  }
  ~GemmBuffers() {
    cudaFree(a);
    cudaFree(b);
    cudaFree(c);
  }
};
}  // namespace

double raw_gemm_seconds(int device, int64_t m, int64_t n, int64_t k, int iters, bool tf32) {
  auto& be = static_cast<CudaBackend&>(backend(device));
  GemmBuffers x(m, n, k);
  const float alpha = 1.f, beta = 0.f;
  cublasMath_t mode;
  CUBLAS_CHECK(cublasGetMathMode(be.blas(), &mode));
  CUBLAS_CHECK(cublasSetMathMode(be.blas(), tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
  const double s = seconds_per_call(be, iters, [&] {
    CUBLAS_CHECK(cublasSgemm(be.blas(), CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(n), static_cast<int>(m),
                             static_cast<int>(k), &alpha, x.b, static_cast<int>(n), x.a, static_cast<int>(k), &beta, x.c,
                             static_cast<int>(n)));
  });
  CUBLAS_CHECK(cublasSetMathMode(be.blas(), mode));
  return s;
}

GemmPairSeconds raw_tf32_gemm_plain_vs_batched(int device, int64_t m, int64_t n, int64_t k, bool trans_b, int iters) {
  auto& be = static_cast<CudaBackend&>(backend(device));
  GemmBuffers x(m, n, k);
  const float alpha = 1.f, beta = 0.f;
  const int M = static_cast<int>(m), N = static_cast<int>(n), K = static_cast<int>(k), ldb = trans_b ? K : N;
  const cublasOperation_t ob = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasMath_t mode;
  CUBLAS_CHECK(cublasGetMathMode(be.blas(), &mode));
  CUBLAS_CHECK(cublasSetMathMode(be.blas(), CUBLAS_TF32_TENSOR_OP_MATH));
  GemmPairSeconds r;
  r.plain = seconds_per_call(be, iters, [&] {
    CUBLAS_CHECK(cublasSgemm(be.blas(), ob, CUBLAS_OP_N, N, M, K, &alpha, x.b, ldb, x.a, K, &beta, x.c, N));
  });
  r.batched = seconds_per_call(be, iters, [&] {
    CUBLAS_CHECK(cublasSgemmStridedBatched(be.blas(), ob, CUBLAS_OP_N, N, M, K, &alpha, x.b, ldb, int64_t{K} * N, x.a,
                                           K, int64_t{M} * K, &beta, x.c, N, int64_t{M} * N, 1));
  });
  CUBLAS_CHECK(cublasSetMathMode(be.blas(), mode));
  return r;
}

}  // namespace sa::cuda
