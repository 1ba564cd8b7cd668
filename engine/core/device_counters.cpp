#include "engine/core/device_counters.h"

#include <atomic>

namespace sa {

namespace {
std::atomic<int64_t> g_reads{0}, g_uploads{0}, g_launches{0}, g_kernels{0}, g_lanes{0}, g_wait_ns{0};
std::atomic<int64_t> g_graphs{0}, g_in_graphs{0}, g_graph_breaks{0};
thread_local DeviceCounters t_counts;  // this thread's share; plain adds, only this thread writes it

int64_t get(const std::atomic<int64_t>& a) { return a.load(std::memory_order_relaxed); }
void add(std::atomic<int64_t>& a, int64_t n) { a.fetch_add(n, std::memory_order_relaxed); }
}  // namespace

DeviceCounters device_counters() {
  return {get(g_reads),  get(g_uploads), get(g_launches),  get(g_kernels),     get(g_lanes),
          get(g_wait_ns), get(g_graphs), get(g_in_graphs), get(g_graph_breaks)};
}

DeviceCounters thread_device_counters() { return t_counts; }

namespace counters {
void host_read(int64_t n) { add(g_reads, n), t_counts.host_reads += n; }
void upload(int64_t n) { add(g_uploads, n), t_counts.uploads += n; }
void launch(int64_t n) { add(g_launches, n), t_counts.launches += n; }
void kernel(int64_t n) { add(g_kernels, n), t_counts.kernels += n; }
void lanes(int64_t n) { add(g_lanes, n), t_counts.lanes += n; }
void waited_ns(int64_t ns) { add(g_wait_ns, ns), t_counts.wait_ns += ns; }
void graph(int64_t launches_inside) {
  add(g_graphs, 1), add(g_in_graphs, launches_inside);
  t_counts.graphs += 1, t_counts.in_graphs += launches_inside;
}
void graph_break() { add(g_graph_breaks, 1), t_counts.graph_breaks += 1; }
void take_back(const DeviceCounters& k) {
  host_read(-k.host_reads), upload(-k.uploads), launch(-k.launches), kernel(-k.kernels), lanes(-k.lanes);
}
}  // namespace counters

}  // namespace sa
