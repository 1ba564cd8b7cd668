#include "engine/optim/optimizer.h"

#include <cmath>
#include <array>
#include <map>

namespace sa {

void coalesce_sparse_grads(const std::vector<Tensor>& params) {
  for (const Tensor& p : params) p.sparse_grad().coalesce_in_place(/*allow_padding=*/true);
}

namespace {

// Every gradient (dense, and each sparse gradient's rows), grouped by dtype: one multi-tensor
// call per group.
std::map<DType, std::vector<Tensor>> gradients_by_dtype(const std::vector<Tensor>& params) {
  std::map<DType, std::vector<Tensor>> by;
  for (const Tensor& p : params) {
    if (p.grad().defined()) by[p.grad().dtype()].push_back(p.grad());
    for (const Tensor& r : p.sparse_grad().rows) by[r.dtype()].push_back(r);
  }
  return by;
}

// The sum of squares of every gradient, f64 [1] on the device (undefined when there is none).
Tensor squared_norm(const std::map<DType, std::vector<Tensor>>& grads) {
  NoGrad ng;
  Tensor total;
  for (const auto& [dtype, gs] : grads) {
    Tensor s = Tensor::empty({1}, DType::F64, gs[0].device());
    backend(gs[0].device()).multi_sum_squares(gs, s);
    total = total.defined() ? ops::add(total, s) : s;
  }
  return total;
}

}  // namespace

double global_norm(const std::vector<Tensor>& params) {
  const Tensor total = squared_norm(gradients_by_dtype(params));
  return std::sqrt(total.defined() ? total.item() : 0.0);
}

Tensor clip_by_global_norm(const std::vector<Tensor>& params, double max_norm) {
  NoGrad ng;
  const auto grads = gradients_by_dtype(params);
  const Tensor total = squared_norm(grads);
  if (!total.defined()) return total;
  const Device dev = total.device();
  const Tensor norm = ops::sqrt(total);
  // factor = min(1, max_norm / norm): exactly 1 within the limit (and for a zero norm).
  Tensor factor = Tensor::empty({1}, DType::F64, dev);
  backend(dev).binary(BinaryOp::Div, Tensor::full({1}, max_norm, DType::F64, dev), norm, factor,
                      make_broadcast_plan({1}, {1}, {1}));
  backend(dev).unary(UnaryOp::Clip, factor, factor, 0.0, 1.0);
  for (const auto& [dtype, gs] : grads) backend(dev).multi_scale(gs, factor);
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

// The device of a parameter list (one device: a step never mixes them).
static Device device_of(const std::vector<Tensor>& params) {
  for (const Tensor& p : params)
    SA_CHECK(p.device() == params[0].device(), "optimizer: parameters '{}' and '{}' are on different devices",
             params[0].name(), p.name());
  return params.empty() ? Device::cpu() : params[0].device();
}

void Adagrad::step(const std::vector<Tensor>& params) {
  NoGrad ng;
  const Device dev = device_of(params);
  std::map<DType, std::array<std::vector<Tensor>, 3>> dense;  // w, acc, g
  for (const Tensor& p : params) {
    Tensor& acc = accumulator(p);  // every parameter has one from the first step (checkpoints keep them)
    if (Tensor g = p.grad(); g.defined()) {
      auto& lists = dense[p.dtype()];
      lists[0].push_back(p), lists[1].push_back(acc), lists[2].push_back(g);
    }
  }
  for (const auto& [dtype, lists] : dense) backend(dev).multi_adagrad(lists[0], lists[1], lists[2], lr_);
  for (const Tensor& p : params) {
    if (SparseGrad& sg = p.sparse_grad(); !sg.empty()) {
      sg.coalesce_in_place(/*allow_padding=*/true);  // unique rows (padding slots: id -1, skipped)
      Tensor w = p;
      backend(dev).adagrad_rows(w, accumulator(p), sg.indices[0], sg.rows[0], lr_);
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
  AdamHyper h{lr_, b1_, b2_, eps_, 1.0, 1.0};
  if (bias_correction_) h.c1 = 1 - std::pow(b1_, static_cast<double>(t_)), h.c2 = 1 - std::pow(b2_, static_cast<double>(t_));
  struct Lists {
    std::vector<Tensor> w, m, v, g;
    std::vector<double> decay;
  };
  std::map<DType, Lists> by;
  const Device dev = device_of(params);
  for (const Tensor& p : params) {
    SA_CHECK(p.sparse_grad().empty(), "Adam: parameter '{}' has a row-sparse gradient (Adam here is dense)", p.name());
    Tensor g = p.grad();
    if (!g.defined()) continue;
    auto& [m, v] = moments(p);
    Lists& l = by[p.dtype()];
    l.w.push_back(p), l.m.push_back(m), l.v.push_back(v), l.g.push_back(g);
    l.decay.push_back(wd_ > 0 && !no_decay_.count(p.impl()) ? wd_ : 0.0);
  }
  for (const auto& [dtype, l] : by) backend(dev).multi_adam(l.w, l.m, l.v, l.g, l.decay, h);
  for (const Tensor& p : params) p.zero_grad();
}

}  // namespace sa
