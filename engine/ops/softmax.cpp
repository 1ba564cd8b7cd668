// softmax, log_softmax, logsumexp and the cross-entropy losses (last axis).
#include "engine/ops/op_util.h"
#include "engine/ops/ops.h"

namespace sa::ops {
using namespace detail;

namespace {

Shape rows_shape(const Tensor& x) {
  Shape s = x.shape();
  s.pop_back();
  return s;
}

Tensor softmax_impl(Op id, const Tensor& x, bool log) {
  const char* name = op_name(id);
  check_same(name, {x});
  SA_CHECK(x.rank() >= 1 && x.dim(-1) > 0, "{}: needs a non-empty last axis, got {}", name, describe(x));
  Tensor y = like(x);
  be(x).softmax(x, y, log);
  record(id, {x}, {y}, [=](const std::vector<Tensor>& gs) {
    Tensor gx = like(x);
    be(x).softmax_backward(y, gs[0], gx, log, false);
    accumulate_grad(x, gx, true);
  });
  return y;
}

}  // namespace

Tensor softmax(const Tensor& x) { return softmax_impl(Op::softmax, x, false); }
Tensor log_softmax(const Tensor& x) { return softmax_impl(Op::log_softmax, x, true); }

Tensor logsumexp(const Tensor& x) {
  check_same("logsumexp", {x});
  SA_CHECK(x.rank() >= 1 && x.dim(-1) > 0, "logsumexp: needs a non-empty last axis, got {}", describe(x));
  Tensor out = Tensor::empty(rows_shape(x), x.dtype(), x.device());
  be(x).logsumexp(x, out);
  record(Op::logsumexp, {x}, {out}, [=](const std::vector<Tensor>& gs) {
    // d lse / dx = softmax(x)
    Tensor p = like(x);
    be(x).softmax(x, p, false);
    Shape col = x.shape();
    col.back() = 1;
    Tensor g = gs[0].view(col);
    Tensor gx = like(x);
    be(x).binary(BinaryOp::Mul, p, g, gx, make_broadcast_plan(x.shape(), x.shape(), col));
    accumulate_grad(x, gx, true);
  });
  return out;
}

Tensor cross_entropy(const Tensor& logits, const Tensor& labels) {
  check_same("cross_entropy", {logits});
  SA_CHECK(logits.rank() >= 1 && labels.shape() == rows_shape(logits),
           "cross_entropy: labels {} do not match logits {} (one label per row)", describe(labels), describe(logits));
  check_index("cross_entropy", labels, logits);
  Tensor loss = Tensor::empty(rows_shape(logits), logits.dtype(), logits.device());
  Tensor lse = like(loss);
  be(logits).cross_entropy(logits, labels, loss, lse);
  record(Op::cross_entropy, {logits}, {loss}, [=](const std::vector<Tensor>& gs) {
    Tensor gx = like(logits);
    be(logits).cross_entropy_backward(logits, labels, lse, gs[0], gx, false);
    accumulate_grad(logits, gx, true);
  });
  return loss;
}

Tensor soft_cross_entropy(const Tensor& logits, const Tensor& targets) {
  check_same("soft_cross_entropy", {logits, targets});
  SA_CHECK(logits.shape() == targets.shape(), "soft_cross_entropy: targets {} do not match logits {}",
           describe(targets), describe(logits));
  Tensor loss = Tensor::empty(rows_shape(logits), logits.dtype(), logits.device());
  Tensor lse = like(loss);
  be(logits).soft_cross_entropy(logits, targets, loss, lse);
  record(Op::soft_cross_entropy, {logits}, {loss}, [=](const std::vector<Tensor>& gs) {
    Tensor gx = like(logits);
    be(logits).soft_cross_entropy_backward(logits, targets, lse, gs[0], gx, false);
    accumulate_grad(logits, gx, true);
  });
  return loss;
}

}  // namespace sa::ops
