#include "layers/ner_tagger.h"

#include <cmath>
#include <random>

namespace sa {

namespace {

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
  const int64_t H = o.hidden;
  NerTagger t;
  t.options = o;
  t.W_re = glorot_uniform(F, F, rng, dev);
  t.b_re = Tensor::zeros({F}, DType::F32, dev).set_requires_grad();
  t.lstm = BiLstm::init(F, H, rng, dev);
  t.W_out = glorot_uniform(2 * H, K, rng, dev);
  t.b_out = Tensor::zeros({K}, DType::F32, dev).set_requires_grad();
  std::uniform_real_distribution<double> small(-0.1, 0.1);
  std::vector<double> tr(static_cast<size_t>(K * K));
  for (double& v : tr) v = small(rng);
  t.trans = Tensor::of(tr, {K, K}).to(dev).set_requires_grad();
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
  Tensor o = lstm.forward(ops::linear(h, W_re, b_re), lengths);
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
  std::vector<Tensor> p = {W_re, b_re, W_out, b_out, trans, start, end};
  for (const Tensor& t : lstm.params()) p.push_back(t);
  return p;
}

}  // namespace sa
