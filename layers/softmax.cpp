#include "layers/softmax.h"

#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>

namespace sa {

std::vector<int32_t> LogUniformSampler::sample_unique(int n, std::mt19937_64& rng, int64_t& tries) const {
  SA_CHECK(n > 0 && n <= range_, "sampled softmax: {} samples requested from a vocabulary of {}", n, range_);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  // A byte per id, not a hash set: a draw repeats ids (8,192 distinct of 50k words take ~25k draws),
  // and each repeat is then one load; this runs on the host every step.
  std::vector<uint8_t> seen(static_cast<size_t>(range_), 0);
  std::vector<int32_t> out;
  out.reserve(static_cast<size_t>(n));
  tries = 0;
  while (static_cast<int>(out.size()) < n) {
    ++tries;
    int64_t k = static_cast<int64_t>(std::exp(u(rng) * log_range_)) - 1;
    k = std::min<int64_t>(std::max<int64_t>(k, 0), range_ - 1);
    if (!seen[static_cast<size_t>(k)]) seen[static_cast<size_t>(k)] = 1, out.push_back(static_cast<int32_t>(k));
  }
  return out;
}

double LogUniformSampler::expected_count(int64_t k, int n, int64_t tries) const {
  double p = prob(k);
  return tries == n ? p * n : -std::expm1(static_cast<double>(tries) * std::log1p(-p));
}

void LogUniformSampler::tabulate() {
  log1m_p_.resize(static_cast<size_t>(range_));
  for (int64_t k = 0; k < range_; ++k) log1m_p_[static_cast<size_t>(k)] = std::log1p(-prob(k));
}

double LogUniformSampler::log_q_shift(int32_t id, int n, int64_t tries) const {
  return -std::log(!log1m_p_.empty() && tries != n
                       ? -std::expm1(static_cast<double>(tries) * log1m_p_[static_cast<size_t>(id)])
                       : expected_count(id, n, tries));
}

std::vector<double> LogUniformSampler::log_q_shift(const std::vector<int32_t>& ids, int n, int64_t tries) const {
  std::vector<double> out(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) out[i] = log_q_shift(ids[i], n, tries);
  return out;
}

const LogUniformSampler& tabulated_log_uniform(int64_t range) {
  // The sense softmax asks once a word: the last answer is kept per thread, without the lock (made
  // samplers live as long as the process).
  thread_local int64_t last_range = -1;
  thread_local const LogUniformSampler* last = nullptr;
  if (range == last_range) return *last;
  static std::mutex mu;
  static std::map<int64_t, std::unique_ptr<LogUniformSampler>> made;
  std::lock_guard<std::mutex> lock(mu);
  std::unique_ptr<LogUniformSampler>& s = made[range];
  if (!s) {
    s = std::make_unique<LogUniformSampler>(range);
    s->tabulate();
  }
  last_range = range, last = s.get();
  return *s;
}

Tensor candidate_softmax_loss(const Tensor& x, const Tensor& W, const Tensor& b, const std::vector<int32_t>& true_rows,
                              const std::vector<int32_t>& sampled, const std::vector<double>* true_shift,
                              const std::vector<double>* sampled_shift) {
  const int64_t N = x.dim(0);
  SA_CHECK(static_cast<int64_t>(true_rows.size()) == N, "sampled softmax: {} true rows for {} inputs", true_rows.size(), N);
  return candidate_softmax_loss(x, W, b, Tensor::from(true_rows, {N}, x.device()), sampled, true_shift, sampled_shift);
}

Tensor candidate_softmax_loss(const Tensor& x, const Tensor& W, const Tensor& b, const Tensor& tr,
                              const std::vector<int32_t>& sampled, const std::vector<double>* true_shift,
                              const std::vector<double>* sampled_shift) {
  return candidate_softmax_loss(x, W, b, tr, Tensor::from(sampled, {static_cast<int64_t>(sampled.size())}, x.device()),
                                true_shift, sampled_shift);
}

Tensor candidate_softmax_loss(const Tensor& x, const Tensor& W, const Tensor& b, const Tensor& tr, const Tensor& smp,
                              const std::vector<double>* true_shift, const std::vector<double>* sampled_shift) {
  const int64_t N = x.dim(0), S = smp.numel();
  SA_CHECK(tr.rank() == 1 && tr.dim(0) == N && tr.dtype() == DType::I32 && tr.device() == x.device(),
           "sampled softmax: true rows {} for {} inputs (expected i32 [{}] on {})", describe(tr), N, N,
           x.device().str());
  SA_CHECK(smp.rank() == 1 && smp.dtype() == DType::I32 && smp.device() == x.device(),
           "sampled softmax: sampled rows {} (expected an i32 vector on {})", describe(smp), x.device().str());
  const Device dev = x.device();
  const DType dt = x.dtype();
  Tensor bt = ops::gather_rows(b, tr), bc = ops::gather_rows(b, smp);
  if (true_shift) bt = ops::add(bt, Tensor::of(*true_shift, {N, 1}, dt, dev));
  if (sampled_shift) bc = ops::add(bc, Tensor::of(*sampled_shift, {S, 1}, dt, dev));
  return ops::candidate_softmax(x, ops::gather_rows(W, tr), bt, ops::gather_rows(W, smp), bc, tr, smp);
}

Tensor candidate_softmax_loss_unfused(const Tensor& x, const Tensor& W, const Tensor& b,
                                      const std::vector<int32_t>& true_rows, const std::vector<int32_t>& sampled,
                                      const std::vector<double>* true_shift, const std::vector<double>* sampled_shift) {
  const int64_t N = x.dim(0), S = static_cast<int64_t>(sampled.size());
  SA_CHECK(static_cast<int64_t>(true_rows.size()) == N, "sampled softmax: {} true rows for {} inputs", true_rows.size(), N);
  const Device dev = x.device();
  const DType dt = x.dtype();
  // Accidental hits: every sampled slot holding the row's true id (as the fused op).
  std::unordered_map<int32_t, std::vector<int32_t>> slots;
  for (int64_t s = 0; s < S; ++s) slots[sampled[s]].push_back(static_cast<int32_t>(s));
  std::vector<uint8_t> hits(static_cast<size_t>(N * S), 0);
  bool any_hit = false;
  for (int64_t r = 0; r < N; ++r)
    if (auto it = slots.find(true_rows[r]); it != slots.end())
      for (int32_t s : it->second) hits[r * S + s] = 1, any_hit = true;

  Tensor tr = Tensor::from(true_rows, {N}, dev), smp = Tensor::from(sampled, {S}, dev);
  Tensor logit_true = ops::add(ops::sum(ops::mul(x, ops::gather_rows(W, tr)), 1, true), ops::gather_rows(b, tr));  // [N, 1]
  if (true_shift) logit_true = ops::add(logit_true, Tensor::of(*true_shift, {N, 1}, dt, dev));
  // bias (+ shift) of the samples as one [1, S] row: a single pass over the [N, S] logits
  Tensor row = ops::reshape(ops::gather_rows(b, smp), {1, S});
  if (sampled_shift) row = ops::add(row, Tensor::of(*sampled_shift, {1, S}, dt, dev));
  Tensor logit_s = ops::add(ops::matmul(x, ops::gather_rows(W, smp), false, true), row);  // [N, S]
  if (any_hit)
    logit_s = ops::masked_fill(logit_s, Tensor::from(hits, {N, S}, dev), -std::numeric_limits<double>::infinity());
  return ops::cross_entropy(ops::concat({logit_true, logit_s}, 1), Tensor::zeros({N}, DType::I32, dev));
}

SampledCandidates draw_negatives(const LogUniformSampler& sampler, int n_samples, std::mt19937_64& rng) {
  SampledCandidates c;
  c.n = n_samples;
  c.sampled = sampler.sample_unique(n_samples, rng, c.tries);
  c.sampled_shift = sampler.log_q_shift(c.sampled, n_samples, c.tries);
  return c;
}

void shift_labels(SampledCandidates& c, const std::vector<int32_t>& labels, const LogUniformSampler& sampler) {
  c.true_shift = sampler.log_q_shift(labels, c.n, c.tries);
}

SampledCandidates draw_candidates(const std::vector<int32_t>& labels, const LogUniformSampler& sampler, int n_samples,
                                  std::mt19937_64& rng) {
  SampledCandidates c = draw_negatives(sampler, n_samples, rng);
  shift_labels(c, labels, sampler);
  return c;
}

Tensor sampled_softmax_loss(const Tensor& x, const Tensor& W, const Tensor& b, const std::vector<int32_t>& labels,
                            const SampledCandidates& c) {
  SA_CHECK(static_cast<int64_t>(labels.size()) == x.dim(0) && c.true_shift.size() == labels.size(),
           "sampled softmax: {} labels and {} shifts for {} inputs", labels.size(), c.true_shift.size(), x.dim(0));
  return candidate_softmax_loss(x, W, b, labels, c.sampled, &c.true_shift, &c.sampled_shift);
}

Tensor sampled_softmax_loss(const Tensor& x, const Tensor& W, const Tensor& b, const std::vector<int32_t>& labels,
                            const LogUniformSampler& sampler, int n_samples, std::mt19937_64& rng,
                            std::vector<int32_t>* drawn) {
  const SampledCandidates c = draw_candidates(labels, sampler, n_samples, rng);
  if (drawn) *drawn = c.sampled;
  return sampled_softmax_loss(x, W, b, labels, c);
}

std::vector<double> softmax_init_rows(int64_t vocab, int64_t dim, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> n(0.0, 1.0 / std::sqrt(static_cast<double>(dim)));
  std::vector<double> w(static_cast<size_t>(vocab * dim));
  for (double& v : w) v = n(rng);
  return w;
}

uint64_t softmax_init_seed(uint64_t model_seed, int direction) {
  return (model_seed ^ 0x5eed50f7ull) + 0x9e3779b97f4a7c15ull * static_cast<uint64_t>(direction);
}

Tensor full_softmax_loss(const Tensor& x, const Tensor& W, const Tensor& b, const std::vector<int32_t>& labels) {
  const int64_t N = x.dim(0), V = W.dim(0);
  Tensor logits = ops::add(ops::matmul(x, W, false, true), ops::reshape(b, {1, V}));
  return ops::cross_entropy(logits, Tensor::from(labels, {N}, x.device()));
}

}  // namespace sa
