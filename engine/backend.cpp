// The backend registry and the plans both backends use.
#include "engine/backend.h"

#include <cstdlib>
#include <exception>
#include <string>

#include "engine/core/device_counters.h"

#include "engine/core/error.h"

namespace sa {

Backend& backend_uncounted(Device d) { return d.is_cuda() ? cuda::backend(d.index) : cpu_backend(); }

Backend& backend(Device d) {
  counters::launch();
  return backend_uncounted(d);
}

bool Backend::cuda_graphs_enabled() {
  const char* e = std::getenv("SA_CUDA_GRAPHS");
  return e && (std::string(e) == "1" || std::string(e) == "step");
}

bool Backend::step_graphs_enabled() {
  const char* e = std::getenv("SA_CUDA_GRAPHS");
  return e && std::string(e) == "step";
}

StepGraphs::StepGraphs(Device d, uint64_t key) : d_(d), unwinding_(std::uncaught_exceptions()) {
  if (!Backend::step_graphs_enabled() || counters::in_step()) return;
  backend_uncounted(d).open_step(key);
  open_ = true;
}

void StepGraphs::close() {
  if (!open_) return;
  open_ = false;
  backend_uncounted(d_).close_step(true);
}

StepGraphs::~StepGraphs() noexcept(false) {
  if (!open_) return;
  if (std::uncaught_exceptions() == unwinding_) {  // left without close(): the step is complete
    close();
    return;
  }
  open_ = false;
  try {
    backend_uncounted(d_).close_step(false);
  } catch (...) {  // the error that unwinds says what went wrong
  }
}

void run_as_graph(Device d, uint64_t key, const std::function<void()>& body) {
  if (counters::in_step()) {  // recorded as part of the step's piece (and counted there)
    body();
    return;
  }
  const DeviceCounters before = thread_device_counters();
  const bool graph = backend_uncounted(d).run_as_graph(key, body);
  const DeviceCounters in = thread_device_counters() - before;
  const bool breaks = in.host_reads > 0 || in.uploads > 0;  // no graph holds it: launched kernel by kernel
  if (breaks && Backend::cuda_graphs_enabled())
    counters::graph_break();
  else if (graph)
    counters::graph(in.launches);
}

BroadcastPlan make_broadcast_plan(const Shape& out, const Shape& a, const Shape& b) {
  BroadcastPlan p;
  SA_CHECK(out.size() <= BroadcastPlan::kMaxRank, "broadcast: rank {} exceeds the supported {}", out.size(),
           BroadcastPlan::kMaxRank);
  p.rank = static_cast<int>(out.size());
  auto fill = [&](const Shape& s, int64_t* st) {
    Shape full(out.size(), 1);
    std::copy(s.begin(), s.end(), full.end() - static_cast<int64_t>(s.size()));
    Shape strides = strides_of(full);
    for (int k = 0; k < p.rank; ++k) st[k] = full[k] == 1 && out[k] != 1 ? 0 : strides[k];
  };
  for (int k = 0; k < p.rank; ++k) p.shape[k] = out[k];
  fill(a, p.stride_a);
  fill(b, p.stride_b);
  return p;
}

namespace {

// Whether dims [lo, hi) of the output (size-1 dims aside) are laid out in `st` as a contiguous
// block scaled by one factor (0: broadcast over all of them; 1: contiguous); sets the factor.
bool scaled_contiguous(const BroadcastPlan& p, const int64_t* st, int lo, int hi, int64_t* factor) {
  int64_t span = 1, f = 0;
  bool found = false;
  for (int d = hi - 1; d >= lo; --d) {
    if (p.shape[d] == 1) continue;
    if (!found) f = st[d], found = true;
    else if (st[d] != f * span) return false;
    span *= p.shape[d];
  }
  *factor = f;
  return true;
}

}  // namespace

bool broadcast_as_rows(const BroadcastPlan& p, BroadcastRows* rows) {
  const int64_t* st[2] = {p.stride_a, p.stride_b};
  for (int k = 0; k <= p.rank; ++k) {  // split before dim k; the widest rows (smallest k) first
    BroadcastRows c;
    for (int d = k; d < p.rank; ++d) c.inner *= p.shape[d];
    bool ok = c.inner > 0;
    for (int s = 0; s < 2 && ok; ++s)
      ok = scaled_contiguous(p, st[s], k, p.rank, &c.si[s]) && scaled_contiguous(p, st[s], 0, k, &c.so[s]);
    if (ok) {
      *rows = c;
      return true;
    }
  }
  return false;
}

CopyPlan collapse_copy_plan(const CopyPlan& p) {
  CopyPlan c;
  c.src_offset = p.src_offset, c.dst_offset = p.dst_offset;
  for (int k = 0; k < p.rank; ++k) {
    if (p.shape[k] == 1) continue;
    const int last = c.rank - 1;
    if (last >= 0 && c.src_stride[last] == p.src_stride[k] * p.shape[k] &&
        c.dst_stride[last] == p.dst_stride[k] * p.shape[k]) {  // dim k continues the previous one on both sides
      c.shape[last] *= p.shape[k];
      c.src_stride[last] = p.src_stride[k], c.dst_stride[last] = p.dst_stride[k];
      continue;
    }
    c.shape[c.rank] = p.shape[k], c.src_stride[c.rank] = p.src_stride[k], c.dst_stride[c.rank] = p.dst_stride[k];
    ++c.rank;
  }
  if (c.rank == 0) c.rank = 1, c.shape[0] = 1, c.src_stride[0] = 1, c.dst_stride[0] = 1;  // one element
  return c;
}

int copy_vector_width(const CopyPlan& p, size_t elem_size, const void* src, const void* dst) {
  if (elem_size == 0 || 16 % elem_size != 0 || p.rank < 1) return 1;
  const int64_t v = static_cast<int64_t>(16 / elem_size);
  const int r = p.rank - 1;
  if (p.src_stride[r] != 1 || p.dst_stride[r] != 1 || p.shape[r] % v != 0) return 1;
  if (p.src_offset % v != 0 || p.dst_offset % v != 0) return 1;
  for (int k = 0; k < r; ++k)
    if (p.shape[k] > 1 && (p.src_stride[k] % v != 0 || p.dst_stride[k] % v != 0)) return 1;
  if (reinterpret_cast<uintptr_t>(src) % 16 != 0 || reinterpret_cast<uintptr_t>(dst) % 16 != 0) return 1;
  return static_cast<int>(v);
}

}  // namespace sa
