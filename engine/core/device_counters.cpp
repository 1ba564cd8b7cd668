#include "engine/core/device_counters.h"

#include <atomic>

namespace sa {

namespace {
std::atomic<int64_t> g_reads{0}, g_uploads{0}, g_launches{0}, g_kernels{0}, g_lanes{0}, g_wait_ns{0};
}  // namespace

DeviceCounters device_counters() {
  return {g_reads.load(std::memory_order_relaxed), g_uploads.load(std::memory_order_relaxed),
          g_launches.load(std::memory_order_relaxed), g_kernels.load(std::memory_order_relaxed),
          g_lanes.load(std::memory_order_relaxed), g_wait_ns.load(std::memory_order_relaxed)};
}

namespace counters {
void host_read(int64_t n) { g_reads.fetch_add(n, std::memory_order_relaxed); }
void upload(int64_t n) { g_uploads.fetch_add(n, std::memory_order_relaxed); }
void launch(int64_t n) { g_launches.fetch_add(n, std::memory_order_relaxed); }
void kernel(int64_t n) { g_kernels.fetch_add(n, std::memory_order_relaxed); }
void lanes(int64_t n) { g_lanes.fetch_add(n, std::memory_order_relaxed); }
void waited_ns(int64_t ns) { g_wait_ns.fetch_add(ns, std::memory_order_relaxed); }
}  // namespace counters

}  // namespace sa
