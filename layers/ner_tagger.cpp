#include "layers/ner_tagger.h"

#include <cmath>
#include <random>

namespace sa {

namespace {

Tensor lengths_tensor(const std::vector<int>& lengths, Device dev) {
  return Tensor::from(std::vector<int32_t>(lengths.begin(), lengths.end()), {static_cast<int64_t>(lengths.size())}, dev);
}

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

// A {0, scale} mask of `shape` drawn from the generator's stream (host RNG seeded by it).
Tensor bernoulli_mask(const Shape& shape, double keep, double scale, Generator& gen, Device dev) {
  std::mt19937_64 rng(gen.seed * 0x9E3779B97F4A7C15ull + gen.take(1));
  std::bernoulli_distribution draw(keep);
  std::vector<double> m(static_cast<size_t>(numel(shape)));
  for (double& v : m) v = draw(rng) ? scale : 0.0;
  return Tensor::of(m, shape).to(dev);
}

}  // namespace

NerTagger NerTagger::init(int64_t F, int64_t K, const NerTaggerOptions& o, uint64_t seed, Device dev) {
  std::mt19937_64 rng(seed);
  auto uniform = [&](Shape s, double a) {
    std::uniform_real_distribution<double> u(-a, a);
    std::vector<double> v(static_cast<size_t>(numel(s)));
    for (double& x : v) x = u(rng);
    return Tensor::of(v, s).to(dev).set_requires_grad();
  };
  auto glorot = [&](int64_t r, int64_t c) { return uniform({r, c}, std::sqrt(6.0 / static_cast<double>(r + c))); };
  const int64_t H = o.hidden;
  NerTagger t;
  t.options = o;
  t.W_re = glorot(F, F);
  t.b_re = Tensor::zeros({F}, DType::F32, dev).set_requires_grad();
  std::vector<double> eye(static_cast<size_t>(H * H), 0.0);
  for (int64_t i = 0; i < H; ++i) eye[static_cast<size_t>(i * H + i)] = 1.0;
  for (LstmWeights* w : {&t.fwd, &t.bwd}) {
    w->W = glorot(F + H, 4 * H);
    w->B = Tensor::zeros({4 * H}, DType::F32, dev).set_requires_grad();
    w->W_P = Tensor::of(eye, {H, H}).to(dev);  // constant: no projection
  }
  t.W_out = glorot(2 * H, K);
  t.b_out = Tensor::zeros({K}, DType::F32, dev).set_requires_grad();
  t.trans = uniform({K, K}, 0.1);
  t.start = Tensor::zeros({K}, DType::F32, dev).set_requires_grad();
  t.end = Tensor::zeros({K}, DType::F32, dev).set_requires_grad();
  return t;
}

Tensor NerTagger::emissions(const Tensor& x, const std::vector<int>& lengths, bool train, Generator& gen) const {
  const int64_t B = x.dim(0), T = x.dim(1), F = x.dim(2), H = options.hidden;
  const Device dev = x.device();
  Tensor h = x;
  if (train && options.word_dropout > 0) h = ops::mul(h, bernoulli_mask({B, T, 1}, 1 - options.word_dropout, 1.0, gen, dev));
  if (train && options.locked_dropout > 0)
    h = ops::mul(h, bernoulli_mask({B, 1, F}, 1 - options.locked_dropout, 1 / (1 - options.locked_dropout), gen, dev));
  h = ops::linear(h, W_re, b_re);
  LstmState sf{Tensor::zeros({B, H}, x.dtype(), dev), Tensor::zeros({B, H}, x.dtype(), dev)};
  LstmState sb{Tensor::zeros({B, H}, x.dtype(), dev), Tensor::zeros({B, H}, x.dtype(), dev)};
  const Tensor rev = reverse_index(lengths, T, dev);
  Tensor of = lstm_forward(fwd, h, sf, 0, 0, &lengths);
  Tensor ob = reverse_rows(lstm_forward(bwd, reverse_rows(h, rev), sb, 0, 0, &lengths), rev);
  Tensor o = ops::concat({of, ob}, 2);
  if (train && options.locked_dropout > 0)
    o = ops::mul(o, bernoulli_mask({B, 1, 2 * H}, 1 - options.locked_dropout, 1 / (1 - options.locked_dropout), gen, dev));
  return ops::linear(o, W_out, b_out);
}

Tensor NerTagger::loss(const Tensor& x, const std::vector<int>& lengths, const Tensor& tags, Generator& gen) const {
  const Tensor em = emissions(x, lengths, true, gen);
  return ops::mean(ops::crf_nll(em, tags, lengths_tensor(lengths, x.device()), trans, start, end));
}

Tensor NerTagger::decode(const Tensor& x, const std::vector<int>& lengths) const {
  NoGrad ng;
  Generator unused(0);
  const Tensor em = emissions(x, lengths, false, unused);
  return ops::crf_viterbi(em, lengths_tensor(lengths, x.device()), trans, start, end);
}

std::vector<Tensor> NerTagger::params() const {
  return {W_re, b_re, fwd.W, fwd.B, bwd.W, bwd.B, W_out, b_out, trans, start, end};
}

}  // namespace sa
