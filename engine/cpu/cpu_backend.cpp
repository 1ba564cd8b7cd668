// The CPU backend instance.
#include "engine/cpu/cpu_backend.h"

#include "engine/cpu/blas_kernel.h"

namespace sa {

CpuBackend::CpuBackend() { blas_kernel(); }

Backend& cpu_backend() {
  static CpuBackend b;
  return b;
}

}  // namespace sa
