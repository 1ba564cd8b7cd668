// The CPU backend: OpenBLAS for GEMMs, OpenMP loops for the rest. It is the reference that the
// CUDA backend is tested against, and what CI and GPU-less users run.
#pragma once
#include "engine/backend.h"
#include "engine/core/dispatch.h"

namespace sa {

class CpuBackend final : public Backend {
 public:
  // Chooses the BLAS kernel (blas_kernel.h) before the backend's first product, also in a static
  // link, where this reference is what brings the choice in.
  CpuBackend();
  Device device() const override { return Device::cpu(); }
  CachingAllocator& allocator() override { return host_allocator(); }

  SA_BACKEND_OVERRIDES
};

// The CPU backend whose primitives compute nothing (dry_backend.cpp); cpu_backend() answers with
// it after set_cpu_arithmetic(false).
Backend& dry_cpu_backend();
// The backend that computes (CpuBackend, or the dry one), and the layer over it that notes each
// primitive for the replay audit and keeps it for a step's replay (recording_backend.cpp;
// cpu_backend() answers with it while either is on).
Backend& computing_cpu_backend();
Backend& recording_cpu_backend();

// Parallelize a loop only when it is large enough to pay for the threads.
constexpr int64_t kParallelMin = 1 << 14;

}  // namespace sa
