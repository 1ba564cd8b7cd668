#include "sense/sense_table.h"

#include <cmath>
#include <random>

namespace sa {

namespace {
Tensor normal(Shape s, double stddev, std::mt19937_64& rng, Device dev, DType dt) {
  std::normal_distribution<double> n(0.0, stddev);
  std::vector<double> v(static_cast<size_t>(numel(s)));
  for (double& x : v) x = n(rng);
  return Tensor::of(v, s, dt, dev);
}
}  // namespace

SenseTable::SenseTable(int vocab, int n_context, int dim, uint64_t seed, Device dev, DType dt)
    : vocab_(vocab), C_(n_context) {
  SA_CHECK(vocab > 0 && n_context >= 2 && dim > 0, "sense table: vocab {}, n_context {} (>= 2: sense 0 is the warm-up "
           "sense) and dim {} must be positive", vocab, n_context, dim);
  std::mt19937_64 rng(seed);
  const int64_t R = static_cast<int64_t>(vocab) * n_context;
  W = normal({R, dim}, 1.0 / std::sqrt(static_cast<double>(dim)), rng, dev, dt).set_requires_grad().set_sparse_grad();
  b = Tensor::zeros({R, 1}, dt, dev).set_requires_grad().set_sparse_grad();
  centers = normal({R, dim}, 16.0, rng, dev, dt);
  enabled.resize(static_cast<size_t>(R));
  begin_warmup();
}

std::vector<int32_t> SenseTable::enabled_rows() const {
  std::vector<int32_t> r;
  for (int i = 0; i < rows(); ++i)
    if (is_enabled(i)) r.push_back(i);
  return r;
}

int64_t SenseTable::enabled_count() const {
  int64_t n = 0;
  for (int i = 0; i < rows(); ++i) n += is_enabled(i);
  return n;
}

void SenseTable::begin_warmup() {
  for (int r = 0; r < rows(); ++r) enabled[static_cast<size_t>(r)] = r % C_ == 0 ? 1.f : 0.f;
}

void SenseTable::end_warmup(bool copy) {
  for (int r = 0; r < rows(); ++r) enabled[static_cast<size_t>(r)] = r % C_ == 0 ? 0.f : 1.f;
  if (!copy) return;
  // Rows w*C+1 .. w*C+C-1 take sense 0's W, b and center.
  std::vector<int32_t> from, to;
  for (int w = 0; w < vocab_; ++w)
    for (int s = 1; s < C_; ++s) {
      from.push_back(row(w, 0));
      to.push_back(row(w, s));
    }
  NoGrad ng;
  const Device dev = W.device();
  Tensor src = Tensor::from(from, {static_cast<int64_t>(from.size())}, dev);
  Tensor dst = Tensor::from(to, {static_cast<int64_t>(to.size())}, dev);
  for (Tensor* t : {&W, &b, &centers}) {
    // t[dst] = t[src] exactly: clear the (unique) destination rows (x - x = 0), then add.
    Tensor source = ops::gather_rows(*t, src);
    backend(dev).scatter_add_rows(ops::neg(ops::gather_rows(*t, dst)), dst, *t);
    backend(dev).scatter_add_rows(source, dst, *t);
  }
}

void SenseTable::zero_new_centers() {
  NoGrad ng;
  std::vector<double> keep(static_cast<size_t>(rows()));
  for (int r = 0; r < rows(); ++r) keep[r] = r % C_ == 0 ? 1.0 : 0.0;
  centers.copy_from(ops::mul(centers, Tensor::of(keep, {rows(), 1}, centers.dtype(), centers.device())));
}

double SenseTable::bytes_needed(int64_t vocab, int n_context, int dim, DType dt) {
  const double rows = static_cast<double>(vocab) * n_context;
  // W and b with their Adagrad accumulators, and the centers.
  return rows * (2.0 * dim + 2.0 + dim) * static_cast<double>(dtype_size(dt));
}

}  // namespace sa
