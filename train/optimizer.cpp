#include "train/optimizer.h"

#include <cmath>

namespace sa {

void coalesce_sparse_grads(const std::vector<Tensor>& params) {
  for (const Tensor& p : params) p.sparse_grad().coalesce_in_place();
}

static double sum_squares(const Tensor& g) {
  NoGrad ng;
  return ops::sum(ops::square(g)).item();
}

double clip_global_norm(const std::vector<Tensor>& params, double max_norm) {
  double ss = 0;
  for (const Tensor& p : params) {
    if (p.grad().defined()) ss += sum_squares(p.grad());
    for (const Tensor& r : p.sparse_grad().rows) ss += sum_squares(r);
  }
  double norm = std::sqrt(ss);
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

}  // namespace sa
