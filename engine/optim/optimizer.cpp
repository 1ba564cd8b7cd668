#include "engine/optim/optimizer.h"

#include <cmath>
#include <map>

namespace sa {

void coalesce_sparse_grads(const std::vector<Tensor>& params) {
  for (const Tensor& p : params) p.sparse_grad().coalesce_in_place();
}

namespace {

// The sum of squares of every gradient (dense and sparse rows), f64 [1] on the device. Each
// tensor's sum is added on the device, so the host reads it at most once.
Tensor squared_norm(const std::vector<Tensor>& params) {
  NoGrad ng;
  Tensor total;
  auto add = [&](const Tensor& g) {
    Tensor s = Tensor::empty({1}, DType::F64, g.device());
    backend(g.device()).sum_squares(g, s);
    total = total.defined() ? ops::add(total, s) : s;
  };
  for (const Tensor& p : params) {
    if (p.grad().defined()) add(p.grad());
    for (const Tensor& r : p.sparse_grad().rows) add(r);
  }
  return total;
}

}  // namespace

double global_norm(const std::vector<Tensor>& params) {
  const Tensor total = squared_norm(params);
  return std::sqrt(total.defined() ? total.item() : 0.0);
}

Tensor clip_by_global_norm(const std::vector<Tensor>& params, double max_norm) {
  NoGrad ng;
  const Tensor total = squared_norm(params);
  if (!total.defined()) return total;
  const Device dev = total.device();
  const Tensor norm = ops::sqrt(total);
  // factor = min(1, max_norm / norm): exactly 1 within the limit (and for a zero norm).
  Tensor factor = Tensor::empty({1}, DType::F64, dev);
  backend(dev).binary(BinaryOp::Div, Tensor::full({1}, max_norm, DType::F64, dev), norm, factor,
                      make_broadcast_plan({1}, {1}, {1}));
  backend(dev).unary(UnaryOp::Clip, factor, factor, 0.0, 1.0);
  std::map<DType, Tensor> in_dtype;  // the factor in each gradient dtype, cast once
  auto scale = [&](Tensor g) {
    Tensor& f = in_dtype[g.dtype()];
    if (!f.defined()) f = factor.to(g.dtype());
    backend(dev).binary(BinaryOp::Mul, g, f, g, make_broadcast_plan(g.shape(), g.shape(), {1}));
  };
  for (const Tensor& p : params) {
    if (Tensor g = p.grad(); g.defined()) scale(g);
    for (const Tensor& r : p.sparse_grad().rows) scale(r);
  }
  return norm;
}

double clip_global_norm(const std::vector<Tensor>& params, double max_norm) {
  const Tensor norm = clip_by_global_norm(params, max_norm);
  return norm.defined() ? norm.item() : 0.0;
}

Tensor& Adagrad::accumulator(const Tensor& p) {
  auto it = acc_.find(p.impl());
  if (it == acc_.end()) it = acc_.emplace(p.impl(), Tensor::full(p.shape(), init_, p.dtype(), p.device())).first;
  return it->second;
}

void Adagrad::step(const std::vector<Tensor>& params) {
  NoGrad ng;
  for (const Tensor& p : params) {
    Tensor& acc = accumulator(p);
    Backend& be = backend(p.device());
    Tensor w = p;
    if (Tensor g = p.grad(); g.defined()) be.adagrad(w, acc, g, lr_);
    if (SparseGrad& sg = p.sparse_grad(); !sg.empty()) {
      sg.coalesce_in_place();  // unique rows: each row is updated once
      be.adagrad_rows(w, acc, sg.indices[0], sg.rows[0], lr_);
    }
    p.zero_grad();
  }
}

void Adagrad::step_rows(const Tensor& p, const Tensor& ids, const Tensor& g) {
  NoGrad ng;
  Tensor w = p;
  backend(p.device()).adagrad_rows(w, accumulator(p), ids, g, lr_);
}

std::pair<Tensor, Tensor>& Adam::moments(const Tensor& p) {
  auto it = moments_.find(p.impl());
  if (it == moments_.end())
    it = moments_.emplace(p.impl(), std::pair{Tensor::zeros(p.shape(), p.dtype(), p.device()),
                                              Tensor::zeros(p.shape(), p.dtype(), p.device())}).first;
  return it->second;
}

void Adam::step(const std::vector<Tensor>& params) {
  NoGrad ng;
  ++t_;
  const double c1 = bias_correction_ ? 1 - std::pow(b1_, static_cast<double>(t_)) : 1.0,
               c2 = bias_correction_ ? 1 - std::pow(b2_, static_cast<double>(t_)) : 1.0;
  for (const Tensor& p : params) {
    SA_CHECK(p.sparse_grad().empty(), "Adam: parameter '{}' has a row-sparse gradient (Adam here is dense)", p.name());
    Tensor g = p.grad();
    if (!g.defined()) continue;
    auto& [m, v] = moments(p);
    m = ops::add(ops::scale(m, b1_), ops::scale(g, 1 - b1_));
    v = ops::add(ops::scale(v, b2_), ops::scale(ops::square(g), 1 - b2_));
    Tensor update = ops::div(ops::scale(m, 1 / c1), ops::add_scalar(ops::sqrt(ops::scale(v, 1 / c2)), eps_));
    if (wd_ > 0 && !no_decay_.count(p.impl())) update = ops::add(update, ops::scale(p, wd_));
    Tensor w = p;
    w.copy_from(ops::sub(p, ops::scale(update, lr_)));
    p.zero_grad();
  }
}

}  // namespace sa
