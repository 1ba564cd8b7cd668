#include "layers/nli_classifier.h"

namespace sa {

namespace {

// The mean over each row's first lengths[b] positions of x [B, T, D] (zeros past them).
Tensor mean_over_lengths(const Tensor& x, const std::vector<int>& lengths) {
  std::vector<double> inv;
  for (int n : lengths) inv.push_back(1.0 / n);
  const Tensor scale = Tensor::of(inv, {static_cast<int64_t>(inv.size()), 1}).to(x.device());
  return ops::mul(ops::sum(x, 1), scale);
}

}  // namespace

NliClassifier NliClassifier::init(int64_t F, int64_t H, int64_t dense, double dropout, uint64_t seed, Device dev) {
  std::mt19937_64 rng(seed);
  NliClassifier c;
  c.premise = BiLstm::init(F, H, rng, dev);
  c.hypothesis = BiLstm::init(F, H, rng, dev);
  c.W1 = glorot_uniform(8 * H, dense, rng, dev);
  c.b1 = Tensor::zeros({dense}, DType::F32, dev).set_requires_grad();
  c.W2 = glorot_uniform(dense, 3, rng, dev);
  c.b2 = Tensor::zeros({3}, DType::F32, dev).set_requires_grad();
  c.dropout = dropout;
  return c;
}

Tensor NliClassifier::logits(const Tensor& p, const std::vector<int>& p_len, const Tensor& h,
                             const std::vector<int>& h_len, bool train, Generator& gen) const {
  const Tensor u = mean_over_lengths(premise.forward(p, p_len), p_len);
  const Tensor v = mean_over_lengths(hypothesis.forward(h, h_len), h_len);
  Tensor z = ops::relu(ops::linear(ops::concat({u, v, ops::sub(u, v), ops::mul(u, v)}, 1), W1, b1));
  if (train) z = ops::dropout(z, dropout, gen);
  return ops::linear(z, W2, b2);
}

std::vector<Tensor> NliClassifier::params() const {
  std::vector<Tensor> ps = {W1, b1, W2, b2};
  for (const BiLstm* b : {&premise, &hypothesis})
    for (const Tensor& t : b->params()) ps.push_back(t);
  return ps;
}

}  // namespace sa
