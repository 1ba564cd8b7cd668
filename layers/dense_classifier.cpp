#include "layers/dense_classifier.h"

#include <cmath>
#include <random>

namespace sa {

DenseClassifier DenseClassifier::init(int64_t in, int64_t hidden, int64_t classes, double dropout, uint64_t seed,
                                      Device dev) {
  std::mt19937_64 rng(seed);
  auto glorot = [&](int64_t rows, int64_t cols) {
    const double a = std::sqrt(6.0 / static_cast<double>(rows + cols));
    std::uniform_real_distribution<double> u(-a, a);
    std::vector<double> v(static_cast<size_t>(rows * cols));
    for (double& x : v) x = u(rng);
    return Tensor::of(v, {rows, cols}).to(dev).set_requires_grad();
  };
  DenseClassifier c;
  c.W1 = glorot(in, hidden);
  c.b1 = Tensor::zeros({hidden}, DType::F32, dev).set_requires_grad();
  c.W2 = glorot(hidden, classes);
  c.b2 = Tensor::zeros({classes}, DType::F32, dev).set_requires_grad();
  c.dropout = dropout;
  return c;
}

Tensor DenseClassifier::logits(const Tensor& x, bool train, Generator& gen) const {
  Tensor h = ops::relu(ops::linear(x, W1, b1));
  if (train) h = ops::dropout(h, dropout, gen);
  return ops::linear(h, W2, b2);
}

}  // namespace sa
