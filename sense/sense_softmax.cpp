#include "sense/sense_softmax.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "layers/softmax.h"
#include "sense/selection.h"

namespace sa {

std::vector<int32_t> sample_enabled_rows(const SenseTable& t, int n, std::mt19937_64& rng) {
  std::vector<int32_t> rows = t.enabled_rows();
  const size_t k = std::min(rows.size(), static_cast<size_t>(std::max(n, 0)));
  for (size_t i = 0; i < k; ++i) {  // partial Fisher-Yates: the first k of a uniform permutation
    std::uniform_int_distribution<size_t> u(i, rows.size() - 1);
    std::swap(rows[i], rows[u(rng)]);
  }
  rows.resize(k);
  return rows;
}

Tensor sense_sampled_loss(const Tensor& x, const SenseTable& t, const std::vector<int32_t>& selected,
                          const std::vector<int32_t>& negatives) {
  return candidate_softmax_loss(x, t.W, t.b, selected, negatives);
}

SenseNegatives sample_log_uniform_senses(const SenseTable& t, int n, const std::vector<int32_t>& targets,
                                         std::mt19937_64& rng) {
  const int V = t.vocab(), C = t.n_context();
  const double per_word = std::max(1.0, static_cast<double>(t.enabled_count()) / V);
  const int words = std::clamp(static_cast<int>(std::lround(n / per_word)), 1, V);
  const LogUniformSampler sampler(V);
  int64_t tries = 0;
  SenseNegatives out;
  for (int32_t w : sampler.sample_unique(words, rng, tries)) {
    const double shift = -std::log(sampler.expected_count(w, words, tries));
    for (int s = 0; s < C; ++s)
      if (t.is_enabled(t.row(w, s))) out.rows.push_back(t.row(w, s)), out.shift.push_back(shift);
  }
  for (int32_t w : targets) out.true_shift.push_back(-std::log(sampler.expected_count(w, words, tries)));
  return out;
}

Tensor sense_sampled_loss(const Tensor& x, const SenseTable& t, const std::vector<int32_t>& selected,
                          const SenseNegatives& neg) {
  const bool shifted = !neg.shift.empty();
  return candidate_softmax_loss(x, t.W, t.b, selected, neg.rows, shifted ? &neg.true_shift : nullptr,
                                shifted ? &neg.shift : nullptr);
}

SelectedLoss select_and_sampled_loss(const Tensor& x, const SenseTable& t, const Tensor& ctx,
                                     const std::vector<int32_t>& words, const Tensor& proj, const Tensor& mean,
                                     const std::vector<int32_t>& negatives) {
  const int64_t N = x.dim(0), K = t.n_context(), S = static_cast<int64_t>(negatives.size());
  const Device dev = x.device();
  const SenseCandidates c = sense_candidates(t, words);
  const SelectionSpace space(t, ctx, c.rows, proj, mean, false);
  const Tensor smp = Tensor::from(negatives, {S}, dev);
  auto [loss, selected] = ops::select_candidate_softmax(
      x, t.W, t.b, space.U.to(x.dtype()), space.V.to(x.dtype()), Tensor::from(c.rows, {N * K}, dev),
      Tensor::from(c.enabled, {N * K}, dev), ops::gather_rows(t.W, smp), ops::gather_rows(t.b, smp), smp);
  const std::vector<double> sel = selected.values();
  return {loss, std::vector<int32_t>(sel.begin(), sel.end())};
}

Tensor sense_full_loss(const Tensor& x, const SenseTable& t, const std::vector<int32_t>& selected) {
  const int64_t N = x.dim(0), R = t.rows();
  const Device dev = x.device();
  std::vector<uint8_t> disabled(static_cast<size_t>(R));
  for (int64_t r = 0; r < R; ++r) disabled[r] = !t.is_enabled(static_cast<int>(r));
  Tensor logits = ops::add(ops::matmul(x, t.W, false, true), ops::reshape(t.b, {1, R}));
  logits = ops::masked_fill(logits, Tensor::from(disabled, {1, R}, dev), -std::numeric_limits<double>::infinity());
  return ops::cross_entropy(logits, Tensor::from(selected, {N}, dev));
}

}  // namespace sa
