// matmul, bmm and linear. One raw GEMM helper serves the forward and all four backward cases.
#include "engine/core/precision.h"
#include "engine/ops/op_util.h"
#include "engine/ops/ops.h"

namespace sa::ops {
using namespace detail;

namespace {

// C = op(A) op(B) for 2-D or 3-D (batched) operands; shapes are checked and named under `op`.
// With `acc`, adds the product into that existing tensor instead (beta = 1) and returns it.
// Under precision = "bf16" f32 operands are rounded here: forward and backward products alike.
Tensor gemm(const char* op, const Tensor& a_in, const Tensor& b_in, bool ta, bool tb, const Tensor& acc = Tensor()) {
  check_defined(op, {a_in, b_in});
  const Tensor a = gemm_operand(a_in), b = gemm_operand(b_in);
  SA_CHECK(a.device() == b.device(), "{}: tensors on different devices: {} and {}", op, describe(a), describe(b));
  SA_CHECK(a.dtype() == b.dtype() && is_float(a.dtype()), "{}: dtype mismatch or non-float: {} and {}", op,
           describe(a), describe(b));
  const int r = a.rank();
  SA_CHECK(r == b.rank() && (r == 2 || r == 3), "{}: expected two {}-D operands, got {} and {}", op,
           std::string(op) == "bmm" ? 3 : 2, describe(a), describe(b));
  const int64_t batch = r == 3 ? a.dim(0) : 1;
  SA_CHECK(r == 2 || b.dim(0) == batch, "{}: batch sizes differ: {} and {}", op, describe(a), describe(b));
  GemmArgs g;
  g.trans_a = ta;
  g.trans_b = tb;
  g.m = ta ? a.dim(-1) : a.dim(-2);
  g.k = ta ? a.dim(-2) : a.dim(-1);
  const int64_t kb = tb ? b.dim(-1) : b.dim(-2);
  g.n = tb ? b.dim(-2) : b.dim(-1);
  SA_CHECK(g.k == kb, "{}: inner dimensions differ: {}{} x {}{}", op, describe(a), ta ? "^T" : "", describe(b),
           tb ? "^T" : "");
  g.batch = batch;
  g.stride_a = a.numel() / batch;
  g.stride_b = b.numel() / batch;
  g.stride_c = g.m * g.n;
  Shape cs = r == 3 ? Shape{batch, g.m, g.n} : Shape{g.m, g.n};
  // bf16 operands accumulate and return in f32 (mixed precision).
  DType ct = a.dtype() == DType::BF16 ? DType::F32 : a.dtype();
  Tensor c = acc.defined() ? acc : Tensor::empty(cs, ct, a.device());
  SA_CHECK(c.shape() == cs && c.dtype() == ct, "{}: cannot accumulate {} into {}", op, to_string(cs), describe(c));
  g.beta = acc.defined() ? 1.0 : 0.0;
  if (c.numel() > 0) {
    if (g.k == 0) {
      if (!acc.defined()) be(a).fill(c, 0.0);
    } else {
      be(a).gemm(g, a, b, c);
    }
  }
  return c;
}

// The gradient operand in the dtype of the tensor it multiplies (bf16 GEMMs take bf16 both sides).
Tensor as_operand(const Tensor& g, const Tensor& other) {
  return other.dtype() == DType::BF16 ? g.to(DType::BF16) : g;
}

// A gradient that already exists and has the GEMM's output dtype: the GEMM adds into it.
Tensor existing_grad(const Tensor& t) {
  Tensor g = t.grad();
  return g.defined() && g.dtype() != DType::BF16 ? g : Tensor();
}

Tensor matmul_impl(Op id, const Tensor& a, const Tensor& b, bool ta, bool tb) {
  const char* op = op_name(id);
  // Under precision = "bf16" both operands are rounded once and kept so for the backward, and the
  // gradient is rounded once for both its products. The left operand's bf16 copy (an activation's)
  // lives beside the f32 tensor the tape holds until the backward: half that tensor's memory, for
  // a rounding kernel less, and its traffic, in every backward.
  const Tensor ao = gemm_operand(a), bo = gemm_operand(b);
  Tensor c = gemm(op, ao, bo, ta, tb);
  const Tensor kept = b.requires_grad() ? ao : Tensor();  // only the right operand's gradient reads it
  record(id, {a, b}, {c}, [=](const std::vector<Tensor>& gs) {
    const Tensor g = gemm_operand(gs[0]);
    if (a.requires_grad()) {
      Tensor gb = as_operand(g, bo), into = existing_grad(a);
      // dA = G op(B)^T, laid out as A (transposed back when A was used transposed)
      Tensor ga = ta ? gemm(op, bo, gb, tb, true, into) : gemm(op, gb, bo, false, !tb, into);
      if (into.defined())
        check_finite(op, "gradient", into);
      else
        accumulate_grad(a, ga.dtype() == a.dtype() ? ga : ga.to(a.dtype()), true);
    }
    if (b.requires_grad()) {
      Tensor ga = as_operand(g, kept), into = existing_grad(b);
      Tensor gbb = tb ? gemm(op, ga, kept, true, ta, into) : gemm(op, kept, ga, !ta, false, into);
      if (into.defined())
        check_finite(op, "gradient", into);
      else
        accumulate_grad(b, gbb.dtype() == b.dtype() ? gbb : gbb.to(b.dtype()), true);
    }
  });
  return c;
}

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b, bool ta, bool tb) {
  check_defined("matmul", {a, b});
  SA_CHECK(a.rank() == 2 && b.rank() == 2, "matmul: expected 2-D operands, got {} and {}", describe(a), describe(b));
  return matmul_impl(Op::matmul, a, b, ta, tb);
}

Tensor bmm(const Tensor& a, const Tensor& b, bool ta, bool tb) {
  check_defined("bmm", {a, b});
  SA_CHECK(a.rank() == 3 && b.rank() == 3, "bmm: expected 3-D operands, got {} and {}", describe(a), describe(b));
  return matmul_impl(Op::bmm, a, b, ta, tb);
}

Tensor linear(const Tensor& x, const Tensor& w, const Tensor& bias) {
  check_defined("linear", {x, w});
  SA_CHECK(w.rank() == 2 && x.rank() >= 1 && x.dim(-1) == w.dim(0), "linear: input {} does not match weight {}",
           describe(x), describe(w));
  Shape out = x.shape();
  out.back() = w.dim(1);
  Tensor y = matmul(reshape(x, {x.numel() / x.dim(-1), x.dim(-1)}), w);
  if (bias.defined()) y = add(y, bias);
  return reshape(y, out);
}

}  // namespace sa::ops
