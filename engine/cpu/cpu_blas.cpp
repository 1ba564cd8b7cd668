// CPU GEMM through OpenBLAS (row-major cblas).
#include <cblas.h>
#include <omp.h>

#include <chrono>
#include <vector>

#include "engine/bench_support.h"

#include "engine/cpu/cpu_backend.h"

namespace sa {

void CpuBackend::gemm(const GemmArgs& g, const Tensor& a, const Tensor& b, Tensor& c) {
  if (a.dtype() == DType::BF16 && b.dtype() == DType::BF16 && c.dtype() == DType::F32) {
    // bf16 operands, f32 accumulation: widen (exactly) and run the f32 GEMM. The widening is part
    // of this one primitive (a GPU's bf16 GEMM reads bf16), so it is not counted as launches.
    auto widen = [this](const Tensor& x) {
      Tensor f = Tensor::empty(x.shape(), DType::F32, x.device());
      cast(x, f);
      return f;
    };
    gemm(g, widen(a), widen(b), c);
    return;
  }
  SA_CHECK(a.dtype() == b.dtype() && a.dtype() == c.dtype(), "gemm: mixed dtypes {} {} {} on the CPU",
           dtype_name(a.dtype()), dtype_name(b.dtype()), dtype_name(c.dtype()));
  const auto ta = g.trans_a ? CblasTrans : CblasNoTrans, tb = g.trans_b ? CblasTrans : CblasNoTrans;
  const int m = static_cast<int>(g.m), n = static_cast<int>(g.n), k = static_cast<int>(g.k);
  const int lda = g.trans_a ? m : k, ldb = g.trans_b ? k : n, ldc = n;
  dispatch_float(a.dtype(), "gemm", [&](auto tag) {
    using T = decltype(tag);
    const T *A = a.data<T>(), *B = b.data<T>();
    T* C = c.data<T>();
    auto item = [&](int64_t i) {
      if constexpr (std::is_same_v<T, float>)
        cblas_sgemm(CblasRowMajor, ta, tb, m, n, k, static_cast<float>(g.alpha), A + i * g.stride_a, lda,
                    B + i * g.stride_b, ldb, static_cast<float>(g.beta), C + i * g.stride_c, ldc);
      else
        cblas_dgemm(CblasRowMajor, ta, tb, m, n, k, g.alpha, A + i * g.stride_a, lda, B + i * g.stride_b, ldb, g.beta,
                    C + i * g.stride_c, ldc);
    };
    // Many small items (attention's heads: 64 x 64 x 32 each in bert-small) take OpenBLAS's
    // single-threaded path one after another; side by side, one item a thread, they use every
    // core (OpenBLAS runs single-threaded inside a parallel region). Each item's sums are the same.
    // Larger items go side by side only when there are enough for every thread (else OpenBLAS
    // threads each), and never when they all add into one C (stride_c 0). Other calls stay
    // outside any parallel region, even an inactive one: OpenBLAS's own threads would be a nested
    // region there, and run as one.
    const bool small = g.m * g.n * g.k <= (int64_t{1} << 18);
    if (g.batch > 1 && g.stride_c != 0 && (small || g.batch >= omp_get_max_threads())) {
#pragma omp parallel for schedule(static)
      for (int64_t i = 0; i < g.batch; ++i) item(i);
    } else {
      for (int64_t i = 0; i < g.batch; ++i) item(i);
    }
  });
}


double raw_gemm_seconds(Device d, int64_t m, int64_t n, int64_t k, int iters, bool tf32) {
  if (d.is_cuda()) return cuda::raw_gemm_seconds(d.index, m, n, k, iters, tf32);
  std::vector<float> a(static_cast<size_t>(m * k), 0.5f), b(static_cast<size_t>(k * n), 0.25f),
      c(static_cast<size_t>(m * n));
  auto call = [&] {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(m), static_cast<int>(n),
                static_cast<int>(k), 1.f, a.data(), static_cast<int>(k), b.data(), static_cast<int>(n), 0.f, c.data(),
                static_cast<int>(n));
  };
  call();
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) call();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / iters;
}

}  // namespace sa
