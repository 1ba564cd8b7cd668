// sum, mean and max: over all elements or along one axis.
#include "engine/ops/op_util.h"
#include "engine/ops/ops.h"

namespace sa::ops {
using namespace detail;

namespace {

struct AxisView {
  int64_t outer = 1, n = 1, inner = 1;
  Shape out;
};

AxisView axis_view(const Tensor& x, int ax, bool keepdim) {
  AxisView v;
  for (int k = 0; k < x.rank(); ++k) {
    if (k < ax) v.outer *= x.dim(k);
    if (k > ax) v.inner *= x.dim(k);
    if (k != ax || keepdim) v.out.push_back(k == ax ? 1 : x.dim(k));
  }
  v.n = x.dim(ax);
  return v;
}

// g [outer, inner] broadcast back over the reduced axis into [outer, n, inner], times `factor`.
Tensor expand_back(const Tensor& g, const Tensor& x, const AxisView& v, double factor) {
  Tensor gx = like(x);
  BroadcastPlan p = make_broadcast_plan({v.outer, v.n, v.inner}, {v.outer, 1, v.inner}, {1});
  Tensor s = Tensor::full({1}, factor, x.dtype(), x.device());
  be(x).binary(BinaryOp::Mul, g, s, gx, p);
  return gx;
}

Tensor reduce_axis(Op id, ReduceOp op, const Tensor& x, int axis, bool keepdim, bool mean) {
  const char* name = op_name(id);
  check_same(name, {x});
  int ax = normalize_axis(name, axis, x.rank());
  AxisView v = axis_view(x, ax, keepdim);
  SA_CHECK(v.n > 0 || op == ReduceOp::Sum, "{}: axis {} of {} is empty", name, ax, describe(x));
  Tensor y = Tensor::empty(v.out, x.dtype(), x.device());
  Tensor flat = y.view({v.outer, v.inner});
  Tensor arg = op == ReduceOp::Max ? Tensor::empty({v.outer, v.inner}, DType::I32, x.device()) : Tensor();
  be(x).reduce(op, x, v.outer, v.n, v.inner, flat, arg.defined() ? &arg : nullptr);
  if (mean && v.n > 0) be(x).unary(UnaryOp::Scale, y, y, 1.0 / static_cast<double>(v.n), 0);
  record(id, {x}, {y}, [=](const std::vector<Tensor>& gs) {
    if (op == ReduceOp::Sum) {
      accumulate_grad(x, expand_back(gs[0], x, v, mean ? 1.0 / static_cast<double>(v.n) : 1.0), true);
    } else {
      Tensor gx = zeros_like(x);
      be(x).reduce_max_backward(gs[0], arg, v.outer, v.n, v.inner, gx);
      accumulate_grad(x, gx, true);
    }
  });
  return y;
}

}  // namespace

Tensor sum(const Tensor& x, int axis, bool keepdim) {
  return reduce_axis(Op::sum, ReduceOp::Sum, x, axis, keepdim, false);
}
Tensor mean(const Tensor& x, int axis, bool keepdim) {
  return reduce_axis(Op::mean, ReduceOp::Sum, x, axis, keepdim, true);
}
Tensor max(const Tensor& x, int axis, bool keepdim) {
  return reduce_axis(Op::max, ReduceOp::Max, x, axis, keepdim, false);
}
Tensor sum(const Tensor& x) { return sum(reshape(x, {x.numel()}), 0, true); }
Tensor mean(const Tensor& x) { return mean(reshape(x, {x.numel()}), 0, true); }

}  // namespace sa::ops
