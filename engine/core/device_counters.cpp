#include "engine/core/device_counters.h"

#include <atomic>

namespace sa {

namespace {
std::atomic<int64_t> g_reads{0}, g_uploads{0}, g_launches{0}, g_kernels{0}, g_lanes{0}, g_wait_ns{0};
std::atomic<int64_t> g_graphs{0}, g_in_graphs{0}, g_graph_breaks{0};
thread_local DeviceCounters t_counts;  // this thread's share; plain adds, only this thread writes it
// The step being recorded: one per process (a GPU records only while one host thread uses it;
// the CPU runs a step's LSTM sequences on threads of its own, whose launches are the step's).
std::atomic<bool> g_step_open{false}, g_step_count_here{false};
std::atomic<int64_t> g_step_launches_at{0};  // g_launches when the piece began

int64_t get(const std::atomic<int64_t>& a) { return a.load(std::memory_order_relaxed); }
void add(std::atomic<int64_t>& a, int64_t n) { a.fetch_add(n, std::memory_order_relaxed); }
}  // namespace

DeviceCounters device_counters() {
  return {get(g_reads),  get(g_uploads), get(g_launches),  get(g_kernels),     get(g_lanes),
          get(g_wait_ns), get(g_graphs), get(g_in_graphs), get(g_graph_breaks)};
}

DeviceCounters thread_device_counters() { return t_counts; }

namespace counters {
void host_read(int64_t n) {
  if (n > 0 && g_step_count_here.load(std::memory_order_relaxed)) step_piece();
  add(g_reads, n), t_counts.host_reads += n;
}
void upload(int64_t n) {
  if (n > 0 && g_step_count_here.load(std::memory_order_relaxed)) step_piece();
  add(g_uploads, n), t_counts.uploads += n;
}
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
void step_begun(bool count_here) {
  g_step_launches_at = get(g_launches);
  g_step_count_here = count_here;
  g_step_open = true;
}
void step_piece(bool started) {
  const int64_t now = get(g_launches), n = now - g_step_launches_at.exchange(now);
  if (g_step_open && started && n > 0) graph(n);
}
void step_ended() {
  if (g_step_open && g_step_count_here) step_piece();
  g_step_open = false, g_step_count_here = false;
}
bool in_step() { return g_step_open.load(std::memory_order_relaxed); }
}  // namespace counters

}  // namespace sa
