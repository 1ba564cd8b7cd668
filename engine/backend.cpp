// The backend registry and the plans both backends use.
#include "engine/backend.h"

#include "engine/core/device_counters.h"

#include "engine/core/error.h"

namespace sa {

Backend& backend_uncounted(Device d) { return d.is_cuda() ? cuda::backend(d.index) : cpu_backend(); }

Backend& backend(Device d) {
  counters::launch();
  return backend_uncounted(d);
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

}  // namespace sa
