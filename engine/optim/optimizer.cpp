#include "engine/optim/optimizer.h"

#include <cmath>

namespace sa {

void coalesce_sparse_grads(const std::vector<Tensor>& params) {
  for (const Tensor& p : params) p.sparse_grad().coalesce_in_place();
}

double global_norm(const std::vector<Tensor>& params) {
  // Each tensor's sum of squares (in double, without a squared copy of the gradient) added on the
  // device, then read once: a read per tensor made the host wait for the GPU dozens of times a step.
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
  return std::sqrt(total.defined() ? total.item() : 0.0);
}

double clip_global_norm(const std::vector<Tensor>& params, double max_norm) {
  const double norm = global_norm(params);
  if (norm > max_norm && norm > 0) {
    double s = max_norm / norm;
    for (const Tensor& p : params) {
      if (Tensor g = p.grad(); g.defined()) backend(g.device()).unary(UnaryOp::Scale, g, g, s, 0);
      for (Tensor& r : p.sparse_grad().rows) backend(r.device()).unary(UnaryOp::Scale, r, r, s, 0);
    }
  }
  return norm;
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
