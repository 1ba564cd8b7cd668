// The CPU backend instance, or the one without arithmetic.
#include "engine/cpu/cpu_backend.h"

#include <atomic>

#include "engine/cpu/blas_kernel.h"
#include "engine/replay_audit.h"
#include "engine/step_replay.h"

namespace sa {

CpuBackend::CpuBackend() { blas_kernel(); }

namespace {
std::atomic<bool> g_arithmetic{true};
}  // namespace

Backend& computing_cpu_backend() {
  static CpuBackend b;
  return g_arithmetic.load(std::memory_order_relaxed) ? b : dry_cpu_backend();
}

Backend& cpu_backend() {
  return replay_audit::on() || StepReplay::capturing_on(Device::cpu()) ? recording_cpu_backend() : computing_cpu_backend();
}

void set_cpu_arithmetic(bool on) {
  g_arithmetic = on;
  host_allocator().zero_blocks(!on);  // what the host reads stays finite (allocator.h)
}

bool cpu_arithmetic() { return g_arithmetic; }

}  // namespace sa
