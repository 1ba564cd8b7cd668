#include "layers/bilstm.h"

#include <cmath>

namespace sa {

namespace {

// Row-major index of each position after reversing every row within its length (the padding
// stays in place): applying it twice gives back the original order.
Tensor reverse_index(const std::vector<int>& lengths, int64_t T, Device dev) {
  std::vector<int32_t> idx;
  for (size_t b = 0; b < lengths.size(); ++b)
    for (int64_t t = 0; t < T; ++t)
      idx.push_back(static_cast<int32_t>(static_cast<int64_t>(b) * T + (t < lengths[b] ? lengths[b] - 1 - t : t)));
  return Tensor::from(idx, {static_cast<int64_t>(idx.size())}, dev);
}

Tensor reverse_rows(const Tensor& x, const Tensor& index) {
  const int64_t B = x.dim(0), T = x.dim(1), F = x.dim(2);
  return ops::reshape(ops::gather_rows(ops::reshape(x, {B * T, F}), index), {B, T, F});
}

}  // namespace

Tensor glorot_uniform(int64_t rows, int64_t cols, std::mt19937_64& rng, Device dev) {
  const double a = std::sqrt(6.0 / static_cast<double>(rows + cols));
  std::uniform_real_distribution<double> u(-a, a);
  std::vector<double> v(static_cast<size_t>(rows * cols));
  for (double& x : v) x = u(rng);
  return Tensor::of(v, {rows, cols}).to(dev).set_requires_grad();
}

Tensor lengths_tensor(const std::vector<int>& lengths, Device dev) {
  return Tensor::from(std::vector<int32_t>(lengths.begin(), lengths.end()), {static_cast<int64_t>(lengths.size())}, dev);
}

BiLstm BiLstm::init(int64_t in, int64_t H, std::mt19937_64& rng, Device dev) {
  BiLstm b;
  b.hidden = H;
  std::vector<double> eye(static_cast<size_t>(H * H), 0.0);
  for (int64_t i = 0; i < H; ++i) eye[static_cast<size_t>(i * H + i)] = 1.0;
  for (LstmWeights* w : {&b.fwd, &b.bwd}) {
    w->W = glorot_uniform(in + H, 4 * H, rng, dev);
    w->B = Tensor::zeros({4 * H}, DType::F32, dev).set_requires_grad();
    w->W_P = Tensor::of(eye, {H, H}).to(dev);  // constant: no projection
  }
  return b;
}

Tensor BiLstm::forward(const Tensor& x, const std::vector<int>& lengths) const {
  const int64_t B = x.dim(0), T = x.dim(1);
  const Device dev = x.device();
  LstmState sf{Tensor::zeros({B, hidden}, x.dtype(), dev), Tensor::zeros({B, hidden}, x.dtype(), dev)};
  LstmState sb{Tensor::zeros({B, hidden}, x.dtype(), dev), Tensor::zeros({B, hidden}, x.dtype(), dev)};
  const Tensor rev = reverse_index(lengths, T, dev);
  const Tensor of = lstm_forward(fwd, x, sf, 0, 0, &lengths);
  const Tensor ob = reverse_rows(lstm_forward(bwd, reverse_rows(x, rev), sb, 0, 0, &lengths), rev);
  return ops::concat({of, ob}, 2);
}

}  // namespace sa
