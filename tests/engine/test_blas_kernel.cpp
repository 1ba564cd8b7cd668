// The BLAS runs the best GEMM kernel the CPU supports, and a wrong kernel is refused.
#include <gtest/gtest.h>

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <vector>

#include "engine/cpu/blas_kernel.h"

namespace sa {
namespace {

TEST(BlasKernel, NotGenericWhereTheCpuHasAvx2) {
  const CpuSimd simd = cpu_simd();
  if (!simd.avx2_fma) GTEST_SKIP() << "this CPU has no AVX2/FMA: a generic kernel is the best it can run";
  if (std::getenv("OPENBLAS_CORETYPE"))
    GTEST_SKIP() << "OPENBLAS_CORETYPE=" << std::getenv("OPENBLAS_CORETYPE") << " chooses the kernel here";
  const BlasKernel& k = blas_kernel();
  EXPECT_GE(blas_core_level(k.core), 1) << blas_kernel_line();
  if (simd.avx512) {
    EXPECT_EQ(blas_core_level(k.core), 2) << blas_kernel_line();
  }
  // The library itself reports the kernel we record.
  EXPECT_EQ(k.core, std::string(openblas_get_corename()));
}

// What happens on a CPU the library does not know (e.g. Debian 12's OpenBLAS on recent Intel
// models): it loads with its generic Prescott kernel, and the selection moves it up.
TEST(BlasKernel, AGenericCoreChosenAtLoadIsReplacedAndChecked) {
  const CpuSimd simd = cpu_simd();
  if (!simd.avx2_fma) GTEST_SKIP() << "this CPU has no AVX2/FMA";
  if (std::getenv("OPENBLAS_CORETYPE")) GTEST_SKIP() << "OPENBLAS_CORETYPE chooses the kernel here";
  // A product larger than the library's blocks, multi-threaded, before and after each switch: the
  // buffers set up at load serve the kernel chosen later.
  const int m = 515, n = 389, k = 643;
  std::vector<float> a(size_t(m) * k), b(size_t(k) * n);
  for (size_t i = 0; i < a.size(); ++i) a[i] = float((i * 7919) % 1000) / 1000.f - 0.5f;
  for (size_t i = 0; i < b.size(); ++i) b[i] = float((i * 104729) % 1000) / 1000.f - 0.5f;
  auto product = [&] {
    std::vector<float> c(size_t(m) * n);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.f, a.data(), k, b.data(), k, 0.f, c.data(), n);
    return c;
  };
  auto expect_same = [&](const std::vector<float>& x, const std::vector<float>& y, const char* what) {
    double worst = 0;
    for (size_t i = 0; i < x.size(); ++i) worst = std::max(worst, double(std::abs(x[i] - y[i])));
    EXPECT_LT(worst, 1e-3) << what;  // sums of 643 products of magnitude <= 0.25: rounding only
  };
  const std::vector<float> before = product();
  const std::string kept = blas_kernel().core;
  ASSERT_TRUE(force_blas_core("Prescott")) << "this BLAS cannot switch its core";
  ASSERT_EQ(blas_core_level(openblas_get_corename()), 0) << openblas_get_corename();
  expect_same(product(), before, "on Prescott");
  const BlasKernel chosen = select_blas_kernel();
  EXPECT_EQ(chosen.core, std::string(openblas_get_corename()));
  EXPECT_EQ(blas_core_level(chosen.core), simd.avx512 ? 2 : 1) << chosen.core << "; " << chosen.note;
  EXPECT_NE(chosen.chosen_by.find("OpenBLAS chose Prescott"), std::string::npos) << chosen.chosen_by;
  expect_same(product(), before, "after the switch");
  force_blas_core(kept.c_str());
  EXPECT_EQ(std::string(openblas_get_corename()), kept);
}

TEST(BlasKernel, OnlyACoreBelowTheCpuIsReplaced) {
  const CpuSimd none{}, avx2{true, false}, avx512{true, true};
  EXPECT_EQ(better_blas_core("Prescott", avx512), "SkylakeX");
  EXPECT_EQ(better_blas_core("Haswell", avx512), "SkylakeX");
  EXPECT_EQ(better_blas_core("Prescott", avx2), "Haswell");
  EXPECT_EQ(better_blas_core("Sandybridge", avx2), "Haswell");
  EXPECT_EQ(better_blas_core("Zen", avx2), "");
  EXPECT_EQ(better_blas_core("Cooperlake", avx512), "");
  EXPECT_EQ(better_blas_core("Prescott", none), "");
}

TEST(BlasKernel, TheSelfCheckPassesTheLibraryAndRefusesAWrongKernel) {
  auto sgemm = [](bool ta, bool tb, int m, int n, int k, float alpha, const float* a, int lda, const float* b, int ldb,
                  float beta, float* c, int ldc) {
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda,
                b, ldb, beta, c, ldc);
  };
  auto dgemm = [](bool ta, bool tb, int m, int n, int k, double alpha, const double* a, int lda, const double* b,
                  int ldb, double beta, double* c, int ldc) {
    cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda,
                b, ldb, beta, c, ldc);
  };
  EXPECT_TRUE(gemm_self_check(sgemm, dgemm));
  // A kernel that drops the last product of each sum, as a mis-tiled edge would.
  auto short_sgemm = [&](bool ta, bool tb, int m, int n, int k, float alpha, const float* a, int lda, const float* b,
                         int ldb, float beta, float* c, int ldc) {
    sgemm(ta, tb, m, n, k > 1 ? k - 1 : k, alpha, a, lda, b, ldb, beta, c, ldc);
  };
  EXPECT_FALSE(gemm_self_check(short_sgemm, dgemm));
  // One that ignores the transposes.
  auto plain_dgemm = [&](bool, bool, int m, int n, int k, double alpha, const double* a, int, const double* b, int,
                         double beta, double* c, int ldc) { dgemm(false, false, m, n, k, alpha, a, k, b, n, beta, c, ldc); };
  EXPECT_FALSE(gemm_self_check(sgemm, plain_dgemm));
}

}  // namespace
}  // namespace sa
