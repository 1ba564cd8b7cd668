// Which GEMM kernel the CPU's BLAS runs, and the choice of a better one where the BLAS chose a
// generic kernel on a CPU with AVX2 or AVX-512. Debian 12's OpenBLAS (0.3.21) does not know recent
// Intel models and falls back to its Prescott kernel, about 3x slower there; it exports the
// switch its own OPENBLAS_CORETYPE uses at load, so the process re-selects the core in place
// before its first product, checks the new kernel against a plain reference and keeps it only
// when it agrees. A user's own OPENBLAS_CORETYPE always wins.
#pragma once
#include <functional>
#include <string>

namespace sa {

struct CpuSimd {
  bool avx2_fma = false;
  bool avx512 = false;  // F, BW, DQ and VL: what OpenBLAS's SkylakeX kernels need
};
CpuSimd cpu_simd();

// 0: generic (no AVX2 kernels), 1: AVX2 kernels (Haswell, Zen, Excavator), 2: AVX-512 kernels.
int blas_core_level(const std::string& core);

// The OpenBLAS core to force for `current` on a CPU with `simd`, or "" to keep `current`: only a
// core below what the CPU can run is replaced.
std::string better_blas_core(const std::string& current, CpuSimd simd);

// A few single- and double-precision products of odd shapes, with every transpose, through `sgemm`
// and `dgemm` (row-major cblas signatures without the order argument), against a plain sum.
using SgemmFn = std::function<void(bool ta, bool tb, int m, int n, int k, float alpha, const float* a, int lda,
                                   const float* b, int ldb, float beta, float* c, int ldc)>;
using DgemmFn = std::function<void(bool ta, bool tb, int m, int n, int k, double alpha, const double* a, int lda,
                                   const double* b, int ldb, double beta, double* c, int ldc)>;
bool gemm_self_check(const SgemmFn& sgemm, const DgemmFn& dgemm);

struct BlasKernel {
  std::string library;  // "OpenBLAS 0.3.21 ..." (the library's own config string)
  std::string core;     // the kernel it runs now, e.g. "SkylakeX"
  std::string chosen_by;  // "OpenBLAS", "SenseAlign (was Prescott)", "OPENBLAS_CORETYPE"
  std::string note;     // why a better core was not taken, if one was not
};
// Switches the library to `core` in place ("" or nullptr: its own choice), as OPENBLAS_CORETYPE
// would at load; false where the BLAS cannot switch. Only between products, on one thread.
bool force_blas_core(const char* core);
// The choice itself, made against the core the library runs now (blas_kernel() keeps the first).
BlasKernel select_blas_kernel();

// Selects once per process (the library's static initializer calls it before main) and returns
// the result; the same object afterwards.
const BlasKernel& blas_kernel();
// "OpenBLAS 0.3.21 ..., core SkylakeX (chosen by SenseAlign: OpenBLAS chose Prescott)" for tools.
std::string blas_kernel_line();

}  // namespace sa
