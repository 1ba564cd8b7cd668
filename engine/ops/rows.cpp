// Row gathers (embedding lookups), scatter-add, and the char-CNN convolution with max over time.
#include "engine/core/precision.h"
#include "engine/ops/op_util.h"
#include "engine/ops/ops.h"

namespace sa::ops {
using namespace detail;

Tensor gather_rows(const Tensor& table, const Tensor& idx) {
  check_defined("gather_rows", {table, idx});
  SA_CHECK(table.rank() == 2, "gather_rows: table must be 2-D, got {}", describe(table));
  check_index("gather_rows", idx, table);
  const int64_t n = idx.numel(), d = table.dim(1);
  Shape os = idx.shape();
  os.push_back(d);
  Tensor out = Tensor::empty(os, table.dtype(), table.device());
  Tensor flat_idx = idx.view({n});
  Tensor flat_out = out.view({n, d});
  be(table).gather_rows(table, flat_idx, flat_out);
  record(Op::gather_rows, {table}, {out},
         [=](const std::vector<Tensor>& gs) { accumulate_rows(table, flat_idx, gs[0].view({n, d})); });
  return out;
}

Tensor scatter_add_rows(const Tensor& base, const Tensor& idx, const Tensor& src) {
  check_same("scatter_add_rows", {base, src});
  check_index("scatter_add_rows", idx, base);
  SA_CHECK(base.rank() == 2 && src.rank() == 2 && idx.rank() == 1 && src.dim(0) == idx.dim(0) &&
               src.dim(1) == base.dim(1),
           "scatter_add_rows: expected base [V,D], idx [n], src [n,D]; got {}, {}, {}", describe(base), describe(idx),
           describe(src));
  Tensor out = base.clone();
  be(base).scatter_add_rows(src, idx, out);
  record(Op::scatter_add_rows, {base, src}, {out}, [=](const std::vector<Tensor>& gs) {
    const Tensor& g = gs[0];
    if (src.requires_grad()) {
      Tensor gsrc = like(src);
      be(g).gather_rows(g, idx, gsrc);
      accumulate_grad(src, gsrc, true);
    }
    accumulate_grad(base, g, true);
  });
  return out;
}

Tensor conv1d_max(const Tensor& x, const Tensor& w, const Tensor& b) {
  check_same("conv1d_max", {x, w, b});
  SA_CHECK(x.rank() == 3 && w.rank() == 3 && b.rank() == 1 && x.dim(2) == w.dim(1) && b.dim(0) == w.dim(2) &&
               w.dim(0) >= 1 && w.dim(0) <= x.dim(1),
           "conv1d_max: expected x [N,L,Cin], w [W,Cin,Cout] with W <= L, b [Cout]; got {}, {}, {}", describe(x),
           describe(w), describe(b));
  const int64_t n = x.dim(0), cout = w.dim(2);
  Tensor y = Tensor::empty({n, cout}, x.dtype(), x.device());
  Tensor arg = Tensor::empty({n, cout}, DType::I32, x.device());
  // Under precision = "bf16" the products take rounded operands (x and w forward; the gradient,
  // w and x backward), as the GEMMs do; the bias gradient sums the unrounded gradient.
  const bool rounds = bf16_matmuls() && x.dtype() == DType::F32;
  const Tensor xo = bf16_rounded(x), wo = bf16_rounded(w);
  be(x).conv1d_max(xo, wo, b, y, arg);
  record(Op::conv1d_max, {x, w, b}, {y}, [=](const std::vector<Tensor>& gs) {
    Tensor gx = x.requires_grad() ? zeros_like(x) : Tensor();
    Tensor gw = w.requires_grad() ? zeros_like(w) : Tensor();
    Tensor gb = b.requires_grad() ? zeros_like(b) : Tensor();
    be(x).conv1d_max_backward(xo, wo, arg, rounds ? bf16_rounded(gs[0]) : gs[0], gx.defined() ? &gx : nullptr,
                              gw.defined() ? &gw : nullptr, !rounds && gb.defined() ? &gb : nullptr);
    if (rounds && gb.defined())
      be(x).sum_to(gs[0], gb, make_broadcast_plan(gs[0].shape(), gs[0].shape(), gb.shape()), false);
    accumulate_grad(x, gx, true);
    accumulate_grad(w, gw, true);
    accumulate_grad(b, gb, true);
  });
  return y;
}

}  // namespace sa::ops
