// The BLAS kernel: see blas_kernel.h.
#include "engine/cpu/blas_kernel.h"

#include <cblas.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

// OpenBLAS's DYNAMIC_ARCH builds pick their core in gotoblas_dynamic_init(), reading
// OPENBLAS_CORETYPE, when the library loads; gotoblas_dynamic_quit() forgets the choice. Both are
// exported but not declared in its headers: weak, so a BLAS without them links and keeps its core.
extern "C" {
void gotoblas_dynamic_init(void) __attribute__((weak));
void gotoblas_dynamic_quit(void) __attribute__((weak));
}

namespace sa {

CpuSimd cpu_simd() {
  CpuSimd s;
#if defined(__x86_64__) || defined(__i386__)
  // GCC's checks include the OS's support for the wider registers (XGETBV).
  __builtin_cpu_init();
  s.avx2_fma = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  s.avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
#endif
  return s;
}

int blas_core_level(const std::string& core) {
  for (const char* c : {"SkylakeX", "Cooperlake", "SapphireRapids"})
    if (strcasecmp(core.c_str(), c) == 0) return 2;
  for (const char* c : {"Haswell", "Zen", "Excavator"})
    if (strcasecmp(core.c_str(), c) == 0) return 1;
  return 0;
}

std::string better_blas_core(const std::string& current, CpuSimd simd) {
  const int have = blas_core_level(current);
  if (simd.avx512 && have < 2) return "SkylakeX";
  if (simd.avx2_fma && have < 1) return "Haswell";
  return "";
}

namespace {

// Deterministic values in [-1, 1].
template <class T>
std::vector<T> filled(size_t n, uint32_t seed) {
  std::vector<T> v(n);
  for (auto& x : v) {
    seed = seed * 1664525u + 1013904223u;
    x = static_cast<T>(static_cast<double>(seed >> 8) / double(1 << 23) - 1.0);
  }
  return v;
}

// C = alpha op(A) op(B) + beta C against a sum in double; each entry within `rel` of the sum of
// its products' magnitudes. A wrong kernel misses by whole products, not by rounding.
template <class T, class Fn>
bool check_products(const Fn& gemm, double rel) {
  const int shapes[][3] = {{1, 1, 1}, {7, 5, 3}, {67, 93, 129}, {257, 131, 300}};
  uint32_t seed = 1;
  for (const auto& s : shapes) {
    const int m = s[0], n = s[1], k = s[2];
    for (int t = 0; t < 4; ++t) {
      const bool ta = t & 1, tb = t & 2;
      const auto a = filled<T>(size_t(m) * k, seed++), b = filled<T>(size_t(k) * n, seed++);
      auto c = filled<T>(size_t(m) * n, seed++);
      const auto c0 = c;
      const double alpha = 0.5, beta = 0.25;
      gemm(ta, tb, m, n, k, T(alpha), a.data(), ta ? m : k, b.data(), tb ? k : n, T(beta), c.data(), n);
      for (int i = 0; i < m; ++i)
        for (int j = 0; j < n; ++j) {
          double sum = 0, mag = 0;
          for (int p = 0; p < k; ++p) {
            const double x = ta ? a[size_t(p) * m + i] : a[size_t(i) * k + p];
            const double y = tb ? b[size_t(j) * k + p] : b[size_t(p) * n + j];
            sum += x * y;
            mag += std::fabs(x * y);
          }
          const double want = alpha * sum + beta * c0[size_t(i) * n + j];
          const double bound = rel * (alpha * mag + beta * std::fabs(c0[size_t(i) * n + j])) + rel;
          if (!(std::fabs(c[size_t(i) * n + j] - want) <= bound)) return false;
        }
    }
  }
  return true;
}

void force_core(const char* core) {
  // The same path OPENBLAS_CORETYPE takes at load; the variable is put back afterwards so child
  // processes make their own choice.
  if (core && !*core) core = nullptr;
  const char* before = std::getenv("OPENBLAS_CORETYPE");
  const std::string saved = before ? before : "";
  if (core) setenv("OPENBLAS_CORETYPE", core, 1);
  else unsetenv("OPENBLAS_CORETYPE");
  gotoblas_dynamic_quit();
  gotoblas_dynamic_init();
  if (before) setenv("OPENBLAS_CORETYPE", saved.c_str(), 1);
  else unsetenv("OPENBLAS_CORETYPE");
}

bool library_self_check() {
  return gemm_self_check(
      [](bool ta, bool tb, int m, int n, int k, float alpha, const float* a, int lda, const float* b, int ldb,
         float beta, float* c, int ldc) {
        cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n, k, alpha,
                    a, lda, b, ldb, beta, c, ldc);
      },
      [](bool ta, bool tb, int m, int n, int k, double alpha, const double* a, int lda, const double* b, int ldb,
         double beta, double* c, int ldc) {
        cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n, k, alpha,
                    a, lda, b, ldb, beta, c, ldc);
      });
}

std::string trimmed(const char* s) {
  std::string r = s ? s : "";
  while (!r.empty() && (r.back() == ' ' || r.back() == '\n')) r.pop_back();
  return r;
}

}  // namespace

BlasKernel select_blas_kernel() {
  BlasKernel k;
  k.library = trimmed(openblas_get_config());
  const std::string chosen = trimmed(openblas_get_corename());
  k.core = chosen;
  k.chosen_by = "OpenBLAS";
  if (std::getenv("OPENBLAS_CORETYPE")) {
    k.chosen_by = "OPENBLAS_CORETYPE";
    return k;
  }
  const CpuSimd simd = cpu_simd();
  std::string want = better_blas_core(chosen, simd);
  if (want.empty()) return k;
  if (!gotoblas_dynamic_init || !gotoblas_dynamic_quit) {
    k.note = "this BLAS cannot change its core in a running process; set OPENBLAS_CORETYPE=" + want;
    return k;
  }
  std::string failed;
  while (!want.empty()) {
    force_core(want.c_str());
    const std::string now = trimmed(openblas_get_corename());
    if (blas_core_level(now) > blas_core_level(chosen) && library_self_check()) {
      k.core = now;
      k.chosen_by = "SenseAlign (OpenBLAS chose " + chosen + ")";
      if (!failed.empty()) k.note = failed + " failed the start-up GEMM check";
      return k;
    }
    failed += (failed.empty() ? "" : ", ") + want;
    // Next: the AVX2 kernels where the AVX-512 ones failed.
    want = blas_core_level(want) == 2 && simd.avx2_fma && blas_core_level(chosen) < 1 ? "Haswell" : "";
  }
  force_core(nullptr);  // back to the library's own choice
  k.core = trimmed(openblas_get_corename());
  k.note = failed + " failed the start-up GEMM check; kept " + k.core;
  std::fprintf(stderr,
               "SenseAlign: OpenBLAS's %s kernel failed a start-up GEMM check on this CPU; using its own choice "
               "(%s), which is slower. OPENBLAS_CORETYPE overrides.\n",
               failed.c_str(), k.core.c_str());
  return k;
}

bool force_blas_core(const char* core) {
  if (!gotoblas_dynamic_init || !gotoblas_dynamic_quit) return false;
  force_core(core);
  return true;
}

namespace {
// Before main (and when the Python module loads): the choice is made before any product.
const bool selected_at_load = (blas_kernel(), true);
}  // namespace

bool gemm_self_check(const SgemmFn& sgemm, const DgemmFn& dgemm) {
  return check_products<float>(sgemm, 1e-4) && check_products<double>(dgemm, 1e-12);
}

const BlasKernel& blas_kernel() {
  static const BlasKernel k = select_blas_kernel();
  return k;
}

std::string blas_kernel_line() {
  const BlasKernel& k = blas_kernel();
  std::string s = k.library + ", core " + k.core + " (chosen by " + k.chosen_by + ")";
  if (!k.note.empty()) s += "; " + k.note;
  return s;
}

}  // namespace sa
