#include "sense/translation.h"

#include "sense/selection.h"

#include <cmath>
#include <limits>
#include <unordered_set>

namespace sa {

TranslationCandidates translation_candidates(const SenseTable& t, const TranslationTable& dict,
                                             const std::vector<int32_t>& words, const Tensor& ctx, const Tensor& proj,
                                             const Tensor& mean) {
  NoGrad ng;
  const int C = t.n_context(), T = dict.per_word;
  const int64_t N = static_cast<int64_t>(words.size()), K = static_cast<int64_t>(T) * C;
  SA_CHECK(ctx.dim(0) == N, "translation candidates: {} context vectors for {} words", ctx.dim(0), N);
  TranslationCandidates c;
  c.per_token = static_cast<int>(K);
  c.rows.assign(static_cast<size_t>(N * K), 0);
  c.valid.assign(static_cast<size_t>(N * K), 0);
  c.best.assign(static_cast<size_t>(N), -1);
  bool any = false;
  for (int64_t n = 0; n < N; ++n) {
    const int32_t* tr = dict.of(words[n]);
    for (int k = 0; k < T; ++k)
      for (int s = 0; s < C; ++s)
        if (tr[k] >= 0 && t.is_enabled(t.row(tr[k], s))) {
          const size_t j = static_cast<size_t>(n * K + k * C + s);
          c.rows[j] = t.row(tr[k], s), c.valid[j] = 1, any = true;
        }
  }
  if (!any) return c;
  const SelectionSpace space(t, ctx, c.rows, proj, mean);
  for (int64_t n = 0; n < N; ++n) {
    double best = -INFINITY;
    for (int64_t j = 0; j < K; ++j) {
      if (!c.valid[n * K + j]) continue;
      const double sim = space.cosine(n, space.center(n, j));
      if (c.best[n] < 0 || sim > best) best = sim, c.best[n] = static_cast<int32_t>(j);  // ties: the first
    }
  }
  return c;
}

namespace {

void check_sizes(const Tensor& x, const std::vector<int32_t>& selected, const TranslationCandidates& cand) {
  const int64_t N = x.dim(0), K = cand.per_token;
  SA_CHECK(static_cast<int64_t>(selected.size()) == N && static_cast<int64_t>(cand.rows.size()) == N * K,
           "translation loss: {} selected rows and {} candidates for {} inputs", selected.size(), cand.rows.size(), N);
}

}  // namespace

Tensor sense_translation_loss(const Tensor& x, const SenseTable& t, const std::vector<int32_t>& selected,
                              const TranslationCandidates& cand, const std::vector<int32_t>& negatives) {
  check_sizes(x, selected, cand);
  const int64_t N = x.dim(0), P = x.dim(1), K = cand.per_token, H = 1 + K, S = static_cast<int64_t>(negatives.size());
  const Device dev = x.device();
  // Own rows per token: the selected row, then the T*C candidates (-1 where invalid).
  std::vector<int32_t> own(static_cast<size_t>(N * H)), gather(static_cast<size_t>(N * H));
  std::vector<double> w(static_cast<size_t>(N * H), 0.0);
  for (int64_t n = 0; n < N; ++n) {
    own[n * H] = gather[n * H] = selected[n];
    for (int64_t j = 0; j < K; ++j) {
      const bool ok = cand.valid[n * K + j];
      gather[n * H + 1 + j] = ok ? cand.rows[n * K + j] : selected[n];
      own[n * H + 1 + j] = ok ? cand.rows[n * K + j] : -1;
    }
    const bool both = cand.best[n] >= 0;
    w[n * H] = both ? 0.5 : 1.0;
    if (both) w[n * H + 1 + cand.best[n]] = 0.5;
  }
  Tensor g = Tensor::from(gather, {N * H}, dev), neg = Tensor::from(negatives, {S}, dev);
  return ops::candidate_softmax(x, ops::reshape(ops::gather_rows(t.W, g), {N, H, P}),
                                ops::reshape(ops::gather_rows(t.b, g), {N, H}), ops::gather_rows(t.W, neg),
                                ops::gather_rows(t.b, neg), Tensor::from(own, {N, H}, dev), neg,
                                Tensor::of(w, {N, H}, x.dtype(), dev));
}

Tensor sense_translation_loss_unfused(const Tensor& x, const SenseTable& t, const std::vector<int32_t>& selected,
                                      const TranslationCandidates& cand, const std::vector<int32_t>& negatives) {
  check_sizes(x, selected, cand);
  const int64_t N = x.dim(0), P = x.dim(1), K = cand.per_token, S = static_cast<int64_t>(negatives.size());
  const Device dev = x.device();
  const DType dt = x.dtype();
  const double kInf = std::numeric_limits<double>::infinity();
  Tensor sel = Tensor::from(selected, {N}, dev);
  Tensor l_true = ops::add(ops::sum(ops::mul(x, ops::gather_rows(t.W, sel)), 1, true), ops::gather_rows(t.b, sel));
  std::vector<Tensor> parts = {l_true};
  std::vector<double> target(static_cast<size_t>(N * (1 + K + S)), 0.0);
  if (K > 0) {
    Tensor rows = Tensor::from(cand.rows, {N * K}, dev);
    Tensor w = ops::reshape(ops::gather_rows(t.W, rows), {N, K, P});
    Tensor l_dict = ops::add(ops::sum(ops::mul(w, ops::reshape(x, {N, 1, P})), 2),
                             ops::reshape(ops::gather_rows(t.b, rows), {N, K}));
    std::vector<uint8_t> invalid(cand.valid.size());
    for (size_t j = 0; j < invalid.size(); ++j) invalid[j] = !cand.valid[j];
    parts.push_back(ops::masked_fill(l_dict, Tensor::from(invalid, {N, K}, dev), -kInf));
  }
  if (S > 0) {
    Tensor neg = Tensor::from(negatives, {S}, dev);
    Tensor l_neg = ops::add(ops::matmul(x, ops::gather_rows(t.W, neg), false, true),
                            ops::reshape(ops::gather_rows(t.b, neg), {1, S}));
    // Accidental hits: the selected row, and every valid translation candidate of the row.
    std::vector<uint8_t> hit(static_cast<size_t>(N * S), 0);
    std::unordered_set<int32_t> own;
    for (int64_t n = 0; n < N; ++n) {
      own.clear();
      own.insert(selected[n]);
      for (int64_t j = 0; j < K; ++j)
        if (cand.valid[n * K + j]) own.insert(cand.rows[n * K + j]);
      for (int64_t s = 0; s < S; ++s) hit[n * S + s] = own.count(negatives[s]) > 0;
    }
    parts.push_back(ops::masked_fill(l_neg, Tensor::from(hit, {N, S}, dev), -kInf));
  }
  for (int64_t n = 0; n < N; ++n) {
    const bool both = cand.best[n] >= 0;
    target[n * (1 + K + S)] = both ? 0.5 : 1.0;
    if (both) target[n * (1 + K + S) + 1 + cand.best[n]] = 0.5;
  }
  return ops::soft_cross_entropy(ops::concat(parts, 1), Tensor::of(target, {N, 1 + K + S}, dt, dev));
}

}  // namespace sa
