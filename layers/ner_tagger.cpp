#include "layers/ner_tagger.h"

#include <algorithm>
#include <cmath>
#include <random>

namespace sa {

Tensor dropout_mask(const std::vector<int>& lengths, int64_t F, double keep, double word_keep, Generator& gen,
                    const Tensor& like) {
  std::mt19937_64 rng(gen.seed * 0x9E3779B97F4A7C15ull + gen.take(1));
  std::bernoulli_distribution draw(keep), word(word_keep);
  const float scale = static_cast<float>(keep > 0 ? 1 / keep : 0);
  const int64_t B = static_cast<int64_t>(lengths.size()), N = packed_offsets(lengths).back();
  // Drawn per sentence and per token on the host (a sentence's features, then its tokens); laid
  // out over the packed rows on the device, so a GPU receives B x F + N values, not N x F.
  std::vector<float> sentence_mask;
  std::vector<float> token_kept;
  std::vector<int32_t> sentence_of;
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t f = 0; f < F; ++f) sentence_mask.push_back(draw(rng) ? scale : 0.f);
    for (int t = 0; t < lengths[static_cast<size_t>(b)]; ++t) {
      sentence_of.push_back(static_cast<int32_t>(b));
      if (word_keep < 1) token_kept.push_back(word(rng) ? 1.f : 0.f);
    }
  }
  const Device dev = like.device();
  Tensor mask = ops::gather_rows(Tensor::from(sentence_mask, {B, F}, dev), Tensor::from(sentence_of, {N}, dev));
  if (word_keep < 1) mask = ops::mul(mask, Tensor::from(token_kept, {N, 1}, dev));
  return like.dtype() == DType::F32 ? mask : mask.to(like.dtype());
}

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
  SA_CHECK(!lengths.empty(), "ner tagger: an empty batch");
  const std::vector<int64_t> off = packed_offsets(lengths);
  SA_CHECK(x.rank() == 2 && x.dim(0) == off.back(), "ner tagger: packed x {} for {} tokens", describe(x), off.back());
  const int64_t B = static_cast<int64_t>(lengths.size()), F = x.dim(1), H = options.hidden, K = W_out.dim(1);
  const Device dev = x.device();
  const double keep = 1 - options.locked_dropout;
  Tensor h = x;
  if (train && (options.word_dropout > 0 || options.locked_dropout > 0))
    h = ops::mul(h, dropout_mask(lengths, F, keep, 1 - options.word_dropout, gen, h));
  Tensor o = lstm.forward_packed(ops::linear(h, W_re, b_re), lengths);
  if (train && options.locked_dropout > 0) o = ops::mul(o, dropout_mask(lengths, 2 * H, keep, 1, gen, o));
  // Laid out [B, T, K] for the CRF: position (b, t) reads packed row off[b] + t, padding an extra zero row.
  const int64_t T = *std::max_element(lengths.begin(), lengths.end());
  std::vector<int32_t> idx(static_cast<size_t>(B * T), static_cast<int32_t>(off.back()));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < lengths[static_cast<size_t>(b)]; ++t)
      idx[static_cast<size_t>(b * T + t)] = static_cast<int32_t>(off[static_cast<size_t>(b)] + t);
  const Tensor em = ops::concat({ops::linear(o, W_out, b_out), Tensor::zeros({1, K}, o.dtype(), dev)}, 0);
  return ops::reshape(ops::gather_rows(em, Tensor::from(idx, {B * T}, dev)), {B, T, K});
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
