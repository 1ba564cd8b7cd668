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
    CUBLAS_CHECK(cublasGemmStridedBatchedEx(blas_, ob, oa, n, m, k, &alpha, b.raw(), CUDA_R_16BF, ldb, g.stride_b,
                                            a.raw(), CUDA_R_16BF, lda, g.stride_a, &beta, c.raw(), CUDA_R_32F, ldc,
                                            g.stride_c, batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    return;
  }
  if (a.dtype() != b.dtype() || a.dtype() != c.dtype()) fail_message("gemm: operands of different dtypes");
  if (a.dtype() == DType::F32) {
    const float alpha = static_cast<float>(g.alpha), beta = static_cast<float>(g.beta);
    CUBLAS_CHECK(cublasSgemmStridedBatched(blas_, ob, oa, n, m, k, &alpha, b.data<float>(), ldb, g.stride_b,
                                           a.data<float>(), lda, g.stride_a, &beta, c.data<float>(), ldc, g.stride_c,
                                           batch));
  } else if (a.dtype() == DType::F64) {
    CUBLAS_CHECK(cublasDgemmStridedBatched(blas_, ob, oa, n, m, k, &g.alpha, b.data<double>(), ldb, g.stride_b,
                                           a.data<double>(), lda, g.stride_a, &g.beta, c.data<double>(), ldc,
                                           g.stride_c, batch));
  } else {
    fail_message("gemm: dtype not supported on CUDA");
  }
}

}  // namespace sa
