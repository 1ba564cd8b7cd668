// Broadcasting arithmetic, pointwise functions, casts, masking and dropout.
#include "engine/ops/op_util.h"
#include "engine/ops/ops.h"

namespace sa::ops {
using namespace detail;

namespace {

Tensor binary_raw(BinaryOp op, const Tensor& a, const Tensor& b, const Shape& out_shape) {
  Tensor out = Tensor::empty(out_shape, a.dtype(), a.device());
  be(a).binary(op, a, b, out, make_broadcast_plan(out_shape, a.shape(), b.shape()));
  return out;
}

Tensor binary(Op id, BinaryOp op, const Tensor& a, const Tensor& b) {
  const char* name = op_name(id);
  check_same(name, {a, b});
  Shape os = broadcast_shapes(name, a.shape(), b.shape());
  Tensor out = binary_raw(op, a, b, os);
  record(id, {a, b}, {out}, [=](const std::vector<Tensor>& gs) {
    const Tensor& g = gs[0];
    switch (op) {
      case BinaryOp::Add:
        accumulate_grad(a, reduce_to(g, a.shape()), true);
        accumulate_grad(b, reduce_to(g, b.shape()), false);
        break;
      case BinaryOp::Sub:
        accumulate_grad(a, reduce_to(g, a.shape()), true);
        if (b.requires_grad()) accumulate_grad(b, neg(reduce_to(g, b.shape())), true);
        break;
      case BinaryOp::Mul:
        if (a.requires_grad()) accumulate_grad(a, reduce_to(binary_raw(BinaryOp::Mul, g, b, os), a.shape()), true);
        if (b.requires_grad()) accumulate_grad(b, reduce_to(binary_raw(BinaryOp::Mul, g, a, os), b.shape()), true);
        break;
      case BinaryOp::Div:
        if (a.requires_grad()) accumulate_grad(a, reduce_to(binary_raw(BinaryOp::Div, g, b, os), a.shape()), true);
        if (b.requires_grad()) {  // d(a/b)/db = -out / b
          Tensor t = binary_raw(BinaryOp::Mul, g, out, os);
          t = binary_raw(BinaryOp::Div, t, b, os);
          accumulate_grad(b, neg(reduce_to(t, b.shape())), true);
        }
        break;
    }
  });
  return out;
}

Tensor unary(Op id, UnaryOp op, const Tensor& x, double p0 = 0, double p1 = 0) {
  check_same(op_name(id), {x});
  Tensor y = like(x);
  be(x).unary(op, x, y, p0, p1);
  record(id, {x}, {y}, [=](const std::vector<Tensor>& gs) {
    Tensor gx = like(x);
    be(x).unary_backward(op, x, y, gs[0], gx, p0, p1, false);
    accumulate_grad(x, gx, true);
  });
  return y;
}

}  // namespace

Tensor add(const Tensor& a, const Tensor& b) { return binary(Op::add, BinaryOp::Add, a, b); }
Tensor sub(const Tensor& a, const Tensor& b) { return binary(Op::sub, BinaryOp::Sub, a, b); }
Tensor mul(const Tensor& a, const Tensor& b) { return binary(Op::mul, BinaryOp::Mul, a, b); }
Tensor div(const Tensor& a, const Tensor& b) { return binary(Op::div, BinaryOp::Div, a, b); }

Tensor scale(const Tensor& x, double s) { return unary(Op::scale, UnaryOp::Scale, x, s); }
Tensor add_scalar(const Tensor& x, double s) { return unary(Op::add_scalar, UnaryOp::AddScalar, x, s); }
Tensor relu(const Tensor& x) { return unary(Op::relu, UnaryOp::Relu, x); }
Tensor sigmoid(const Tensor& x) { return unary(Op::sigmoid, UnaryOp::Sigmoid, x); }
Tensor tanh(const Tensor& x) { return unary(Op::tanh, UnaryOp::Tanh, x); }
Tensor gelu(const Tensor& x) { return unary(Op::gelu, UnaryOp::Gelu, x); }
Tensor gelu_erf(const Tensor& x) { return unary(Op::gelu_erf, UnaryOp::GeluErf, x); }
Tensor exp(const Tensor& x) { return unary(Op::exp, UnaryOp::Exp, x); }
Tensor log(const Tensor& x) { return unary(Op::log, UnaryOp::Log, x); }
Tensor neg(const Tensor& x) { return unary(Op::neg, UnaryOp::Neg, x); }
Tensor sqrt(const Tensor& x) { return unary(Op::sqrt, UnaryOp::Sqrt, x); }
Tensor square(const Tensor& x) { return unary(Op::square, UnaryOp::Square, x); }
Tensor clip(const Tensor& x, double lo, double hi) {
  SA_CHECK(lo <= hi, "clip: lower bound {} exceeds upper bound {}", lo, hi);
  return unary(Op::clip, UnaryOp::Clip, x, lo, hi);
}

Tensor cast(const Tensor& x, DType dtype) {
  check_defined("cast", {x});
  if (x.dtype() == dtype) return x;
  Tensor y = x.to(dtype);
  if (is_float(x.dtype()) && is_float(dtype))
    record(Op::cast, {x}, {y}, [=](const std::vector<Tensor>& gs) { accumulate_grad(x, gs[0].to(x.dtype()), true); });
  return y;
}

Tensor masked_fill(const Tensor& x, const Tensor& mask, double value) {
  check_same("masked_fill", {x});
  SA_CHECK(mask.dtype() == DType::U8 && mask.device() == x.device(), "masked_fill: mask must be u8 on {}, got {}",
           x.device().str(), describe(mask));
  SA_CHECK(broadcast_shapes("masked_fill", x.shape(), mask.shape()) == x.shape(),
           "masked_fill: mask {} does not broadcast to {}", describe(mask), describe(x));
  BroadcastPlan plan = make_broadcast_plan(x.shape(), x.shape(), mask.shape());
  Tensor y = like(x);
  be(x).masked_fill(x, mask, value, y, plan);
  record(Op::masked_fill, {x}, {y}, [=](const std::vector<Tensor>& gs) {
    Tensor gx = like(x);
    be(x).masked_fill(gs[0], mask, 0.0, gx, plan);
    accumulate_grad(x, gx, true);
  });
  return y;
}

Tensor draw_distinct(const Tensor& list, int64_t n, uint64_t key) {
  SA_CHECK(list.dtype() == DType::I32 && list.rank() == 1, "draw_distinct: list {} (expected an i32 vector)",
           describe(list));
  SA_CHECK(list.numel() < (int64_t{1} << 31), "draw_distinct: {} entries (at most 2^31 - 1)", list.numel());
  SA_CHECK(n >= 0, "draw_distinct: {} draws", n);
  // No more draws than entries: the backends' permuted_index walks a cycle until it lands below the
  // list's size, which ends only for positions below it.
  Tensor out = Tensor::empty({std::min(n, list.numel())}, DType::I32, list.device());
  be(list).draw_distinct(list, key, out);
  return out;
}

Tensor dropout(const Tensor& x, double p, Generator& gen) {
  check_same("dropout", {x});
  SA_CHECK(p >= 0 && p < 1, "dropout: probability {} is outside [0, 1)", p);
  if (p == 0) return x;
  Tensor mask = like(x);
  be(x).dropout_mask(gen.seed, gen.take(static_cast<uint64_t>(x.numel())), p, mask);
  Tensor y = binary_raw(BinaryOp::Mul, x, mask, x.shape());
  record(Op::dropout, {x}, {y}, [=](const std::vector<Tensor>& gs) {
    accumulate_grad(x, binary_raw(BinaryOp::Mul, gs[0], mask, x.shape()), true);
  });
  return y;
}

}  // namespace sa::ops
