#include "sense/sense_softmax.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "layers/softmax.h"
#include "engine/dist/communicator.h"
#include "sense/selection.h"
#include "sense/working_table.h"

namespace sa {

std::vector<int32_t> sample_enabled_rows(const SenseTable& t, int n, std::mt19937_64& rng) {
  const std::vector<int32_t> rows = t.enabled_rows();
  return host_rows(ops::draw_distinct(Tensor::from(rows, {static_cast<int64_t>(rows.size())}), std::max(n, 0), rng()));
}

Tensor sense_sampled_loss(const Tensor& x, const SenseTable& t, const std::vector<int32_t>& selected,
                          const std::vector<int32_t>& negatives) {
  return candidate_softmax_loss(x, t.W, t.b, selected, negatives);
}

int log_uniform_words(int64_t V, int64_t enabled, int n, SenseOptions::NegativeBudget budget, int64_t max_rows) {
  const double per_word = std::max(1.0, static_cast<double>(enabled) / static_cast<double>(V));
  double words = budget == SenseOptions::NegativeBudget::Words ? n : n / per_word;
  if (budget == SenseOptions::NegativeBudget::Words && max_rows > 0) words = std::min(words, max_rows / per_word);
  return static_cast<int>(std::clamp<int64_t>(std::lround(words), 1, V));
}

WordsDrawnAhead draw_words_ahead(int64_t vocab, int words, std::mt19937_64& rng) {
  WordsDrawnAhead a;
  a.rng_before = rng, a.vocab = vocab;
  a.draw = draw_negatives(tabulated_log_uniform(vocab), words, rng);
  a.rng_after = rng;
  return a;
}

SenseNegatives sample_log_uniform_senses(const SenseTable& t, int n, const std::vector<int32_t>& targets,
                                         std::mt19937_64& rng, SenseOptions::NegativeBudget budget, int64_t max_rows,
                                         WordsDrawnAhead* ahead) {
  const int V = t.vocab(), C = t.n_context();
  const int words = log_uniform_words(V, t.enabled_count(), n, budget, max_rows);
  const LogUniformSampler& sampler = tabulated_log_uniform(V);
  const bool take = ahead && !ahead->taken && ahead->vocab == V && ahead->draw.n == words &&
                    ahead->draw.true_shift.size() == targets.size() && ahead->rng_before == rng;
  SampledCandidates c = take ? std::move(ahead->draw) : draw_candidates(targets, sampler, words, rng);
  if (take) rng = ahead->rng_after, ahead->taken = true;
  SenseNegatives out;
  out.vocab = V, out.words = words, out.tries = c.tries;
  out.true_shift = std::move(c.true_shift);
  out.rows.reserve(c.sampled.size() * static_cast<size_t>(C));
  out.shift.reserve(out.rows.capacity());
  for (size_t i = 0; i < c.sampled.size(); ++i)
    for (int s = 0; s < C; ++s)
      if (const int r = t.row(c.sampled[i], s); t.is_enabled(r)) out.rows.push_back(r), out.shift.push_back(c.sampled_shift[i]);
  return out;
}

double SenseNegatives::word_shift(int32_t w) const {
  SA_CHECK(vocab > 0, "log-Q shift asked of negatives that were not drawn log-uniformly");
  return tabulated_log_uniform(vocab).log_q_shift(w, words, tries);
}

Tensor sense_sampled_loss(const Tensor& x, const SenseTable& t, const std::vector<int32_t>& selected,
                          const SenseNegatives& neg) {
  return sense_sampled_loss(x, t, Tensor::from(selected, {static_cast<int64_t>(selected.size())}, x.device()), neg);
}

Tensor sense_sampled_loss(const Tensor& x, const SenseTable& t, const Tensor& selected, const Tensor& negatives) {
  return candidate_softmax_loss(x, t.W, t.b, selected, negatives);
}

Tensor sense_sampled_loss(const Tensor& x, const SenseTable& t, const Tensor& selected, const SenseNegatives& neg) {
  return candidate_softmax_loss(x, t.W, t.b, selected, neg.rows, neg.shifted() ? &neg.true_shift : nullptr,
                                neg.shifted() ? &neg.shift : nullptr);
}

SelectedLoss select_and_sampled_loss(const Tensor& x, const SenseTable& t, const Tensor& ctx,
                                     const std::vector<int32_t>& words, const Tensor& proj, const Tensor& mean,
                                     const Tensor& smp) {
  const int64_t N = x.dim(0), K = t.n_context();
  const Device dev = x.device();
  const SenseCandidates c = sense_candidates(t, words);
  const SelectionSpace space(t, ctx, c.rows, proj, mean, false);
  auto [loss, selected] = ops::select_candidate_softmax(
      x, t.W, t.b, space.U.to(x.dtype()), space.V.to(x.dtype()), Tensor::from(c.rows, {N * K}, dev),
      Tensor::from(c.enabled, {N * K}, dev), ops::gather_rows(t.W, smp), ops::gather_rows(t.b, smp), smp);
  return {loss, selected};
}

namespace {

// log(e^a + e^b), either may be -inf.
double log_add(double a, double b) {
  if (a == -std::numeric_limits<double>::infinity()) return b;
  if (b == -std::numeric_limits<double>::infinity()) return a;
  return std::max(a, b) + std::log1p(std::exp(-std::abs(a - b)));
}

// Per row of x: the log of the sum of exp(logit) over the enabled rows `t` stores, in chunks.
std::vector<double> stored_log_normalizer(const Tensor& x, const SenseTable& t, int64_t rows_per_chunk) {
  const int64_t N = x.dim(0), R = t.stored_rows(), first = t.first_row();
  const Device dev = x.device();
  std::vector<double> log_z(static_cast<size_t>(N), -std::numeric_limits<double>::infinity());
  const int64_t chunk =
      rows_per_chunk > 0 ? rows_per_chunk : std::max<int64_t>(1, (int64_t{1} << 22) / std::max<int64_t>(N, 1));
  for (int64_t r0 = 0; r0 < R; r0 += chunk) {
    const int64_t r1 = std::min(R, r0 + chunk);
    std::vector<uint8_t> disabled(static_cast<size_t>(r1 - r0));
    for (int64_t r = r0; r < r1; ++r) disabled[static_cast<size_t>(r - r0)] = !t.is_enabled(static_cast<int>(first + r));
    Tensor logits = ops::add(ops::matmul(x, t.W.rows(r0, r1), false, true), ops::reshape(t.b.rows(r0, r1), {1, r1 - r0}));
    logits = ops::masked_fill(logits, Tensor::from(disabled, {1, r1 - r0}, dev), -std::numeric_limits<double>::infinity());
    const std::vector<double> part = ops::logsumexp(logits).values();
    for (int64_t n = 0; n < N; ++n) log_z[static_cast<size_t>(n)] = log_add(log_z[static_cast<size_t>(n)], part[static_cast<size_t>(n)]);
  }
  return log_z;
}

// Per row of x: the log of the sum of exp(logit) over its word's enabled senses (t stores them).
std::vector<double> own_log_mass(const Tensor& x, const SenseTable& t, const std::vector<int32_t>& words) {
  const int64_t N = x.dim(0), C = t.n_context();
  const Device dev = x.device();
  std::vector<int32_t> rows(static_cast<size_t>(N * C));
  std::vector<uint8_t> off(static_cast<size_t>(N * C));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t s = 0; s < C; ++s) {
      const int32_t r = t.row(words[static_cast<size_t>(n)], static_cast<int>(s));
      rows[static_cast<size_t>(n * C + s)] = r, off[static_cast<size_t>(n * C + s)] = !t.is_enabled(r);
    }
  const Tensor idx = Tensor::from(rows, {N * C}, dev);
  Tensor own = ops::add(ops::sum(ops::mul(ops::reshape(ops::gather_rows(t.W, idx), {N, C, x.dim(1)}),
                                          ops::reshape(x, {N, 1, x.dim(1)})),
                                 2),
                        ops::reshape(ops::gather_rows(t.b, idx), {N, C}));
  own = ops::masked_fill(own, Tensor::from(off, {N, C}, dev), -std::numeric_limits<double>::infinity());
  return ops::logsumexp(own).values();
}

Tensor nll_of(const std::vector<double>& log_z, const std::vector<double>& log_w, const Tensor& x) {
  std::vector<double> nll(log_z.size());
  for (size_t n = 0; n < nll.size(); ++n) nll[n] = log_z[n] - log_w[n];
  return Tensor::of(nll, {x.dim(0)}, x.dtype(), x.device());
}

}  // namespace

Tensor sense_word_nll(const Tensor& x, const SenseTable& t, const std::vector<int32_t>& words,
                      int64_t rows_per_chunk) {
  NoGrad ng;
  SA_CHECK(static_cast<int64_t>(words.size()) == x.dim(0), "sense_word_nll: {} words for {} rows", words.size(), x.dim(0));
  SA_CHECK(t.stores_all(), "sense_word_nll: the table stores part of its rows (sharded_word_nll reads a sharded one)");
  return nll_of(stored_log_normalizer(x, t, rows_per_chunk), own_log_mass(x, t, words), x);
}

Tensor sharded_word_nll(const Tensor& x, const SenseTable& shard, const std::vector<int32_t>& words,
                        int64_t rows_per_chunk) {
  NoGrad ng;
  SA_CHECK(static_cast<int64_t>(words.size()) == x.dim(0), "sharded_word_nll: {} words for {} rows", words.size(), x.dim(0));
  const size_t N = words.size();
  const std::vector<double> parts = dist::allgather(stored_log_normalizer(x, shard, rows_per_chunk));
  std::vector<double> log_z(N, -std::numeric_limits<double>::infinity());
  for (size_t r = 0; r < parts.size() / std::max<size_t>(N, 1); ++r)
    for (size_t n = 0; n < N; ++n) log_z[n] = log_add(log_z[n], parts[r * N + n]);
  const WorkingTable own(shard, words);
  return nll_of(log_z, own_log_mass(x, own.table, own.words(words)), x);
}

Tensor sense_full_loss(const Tensor& x, const SenseTable& t, const std::vector<int32_t>& selected) {
  return sense_full_loss(x, t, Tensor::from(selected, {static_cast<int64_t>(selected.size())}, x.device()));
}

Tensor sense_full_loss(const Tensor& x, const SenseTable& t, const Tensor& selected) {
  // Every enabled row as a candidate of the fused candidate softmax (the selected row is then an
  // accidental hit, counted once as the true row): the [N, rows] logits (SaBERT: masked pieces x
  // 5 V) are never held; disabled rows are simply not candidates.
  std::vector<int32_t> enabled;
  enabled.reserve(static_cast<size_t>(t.rows()));
  for (int64_t r = 0; r < t.rows(); ++r)
    if (t.is_enabled(static_cast<int>(r))) enabled.push_back(static_cast<int32_t>(r));
  return candidate_softmax_loss(x, t.W, t.b, selected, enabled);
}

}  // namespace sa
