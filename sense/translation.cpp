#include "sense/translation.h"

#include "sense/selection.h"

#include <cmath>
#include <limits>
#include <unordered_set>

namespace sa {

TranslationCandidates translation_candidates(const SenseTable& t, const TranslationTable& dict,
                                             const std::vector<int32_t>& words, const Tensor& ctx, const Tensor& proj,
                                             const WordMeans& mean_of, const std::vector<uint8_t>* lang) {
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
  auto entries = [&](int64_t n) { return dict.of(words[n], lang && !lang->empty() ? (*lang)[n] : 0); };
  for (int64_t n = 0; n < N; ++n) {
    const int32_t* tr = entries(n);
    for (int k = 0; k < T; ++k)
      for (int s = 0; s < C; ++s)
        if (tr[k] >= 0 && t.is_enabled(t.row(tr[k], s))) {
          const size_t j = static_cast<size_t>(n * K + k * C + s);
          c.rows[j] = t.row(tr[k], s), c.valid[j] = 1, any = true;
        }
  }
  if (!any) return c;
  Tensor mean, center_mean;
  if (mean_of) {
    std::vector<int32_t> cand_words(static_cast<size_t>(N * K));  // each candidate's word (placeholders: the token's)
    for (int64_t n = 0; n < N; ++n) {
      const int32_t* tr = entries(n);
      for (int64_t j = 0; j < K; ++j) cand_words[n * K + j] = tr[j / C] >= 0 ? tr[j / C] : words[n];
    }
    mean = mean_of(words), center_mean = mean_of(cand_words);
  }
  const SelectionSpace space(t, ctx, c.rows, proj, mean, true, center_mean);
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

void keep_best_only(TranslationCandidates& c) {
  const size_t K = static_cast<size_t>(c.per_token);
  for (size_t n = 0; n < c.best.size(); ++n)
    for (size_t j = 0; j < K; ++j) c.valid[n * K + j] = c.valid[n * K + j] && static_cast<int32_t>(j) == c.best[n];
}

namespace {

void check_sizes(const Tensor& x, const std::vector<int32_t>& selected, const TranslationCandidates& cand) {
  const int64_t N = x.dim(0), K = cand.per_token;
  SA_CHECK(static_cast<int64_t>(selected.size()) == N && static_cast<int64_t>(cand.rows.size()) == N * K,
           "translation loss: {} selected rows and {} candidates for {} inputs", selected.size(), cand.rows.size(), N);
}

// Each token's own rows counted once. A word that translates to itself (a dictionary pair with the
// same string on both sides) has its selected row among its candidates; in the softmax twice, each
// copy's probability would be capped at 1/2. A candidate equal to the selected row or to an
// earlier candidate is left out, and the best candidate's target weight goes to the first copy:
// target[n] is 0 for the selected row, 1 + j for candidate j, -1 with no translation.
struct OwnRows {
  std::vector<uint8_t> valid;  // [N * K]
  std::vector<int32_t> target;
};

OwnRows own_rows(const std::vector<int32_t>& selected, const TranslationCandidates& cand) {
  const size_t N = selected.size(), K = static_cast<size_t>(cand.per_token);
  OwnRows o{cand.valid, std::vector<int32_t>(N, -1)};
  for (size_t n = 0; n < N; ++n) {
    auto first_copy = [&](size_t j) -> int32_t {  // the first own row equal to candidate j
      const int32_t r = cand.rows[n * K + j];
      if (r == selected[n]) return 0;
      for (size_t q = 0; q < j; ++q)
        if (cand.valid[n * K + q] && cand.rows[n * K + q] == r) return static_cast<int32_t>(1 + q);
      return static_cast<int32_t>(1 + j);
    };
    for (size_t j = 0; j < K; ++j)
      if (cand.valid[n * K + j] && first_copy(j) != static_cast<int32_t>(1 + j)) o.valid[n * K + j] = 0;
    if (cand.best[n] >= 0) o.target[n] = first_copy(static_cast<size_t>(cand.best[n]));
  }
  return o;
}

void check_shifts(const TranslationShifts* sh, int64_t N, int64_t K, int64_t S) {
  SA_CHECK(!sh || (static_cast<int64_t>(sh->own.size()) == N * (1 + K) &&
                   static_cast<int64_t>(sh->negatives.size()) == S),
           "translation loss: shifts for {} own rows and {} negatives, expected {} and {}", sh ? sh->own.size() : 0,
           sh ? sh->negatives.size() : 0, N * (1 + K), S);
}

}  // namespace

TranslationShifts translation_shifts(const SenseNegatives& neg, const SenseTable& t, const std::vector<int32_t>& selected,
                                     const TranslationCandidates& cand,
                                     const std::function<int32_t(int32_t)>& global_word) {
  const size_t N = selected.size(), K = static_cast<size_t>(cand.per_token);
  const int C = t.n_context();
  auto shift_of_row = [&](int32_t row) {
    const int32_t w = row / C;
    return neg.word_shift(global_word ? global_word(w) : w);
  };
  TranslationShifts sh{std::vector<double>(N * (1 + K), 0.0), neg.shift};
  for (size_t n = 0; n < N; ++n) {
    sh.own[n * (1 + K)] = shift_of_row(selected[n]);
    for (size_t j = 0; j < K; ++j)  // an invalid candidate is masked: its shift is never read
      if (cand.valid[n * K + j]) sh.own[n * (1 + K) + 1 + j] = shift_of_row(cand.rows[n * K + j]);
  }
  return sh;
}

Tensor sense_translation_loss(const Tensor& x, const SenseTable& t, const std::vector<int32_t>& selected,
                              const TranslationCandidates& cand, const std::vector<int32_t>& negatives,
                              const TranslationShifts* shifts) {
  check_sizes(x, selected, cand);
  const int64_t N = x.dim(0), P = x.dim(1), K = cand.per_token, H = 1 + K, S = static_cast<int64_t>(negatives.size());
  check_shifts(shifts, N, K, S);
  const Device dev = x.device();
  // Own rows per token: the selected row, then the T*C candidates (-1 where invalid or a copy).
  const OwnRows o = own_rows(selected, cand);
  std::vector<int32_t> own(static_cast<size_t>(N * H)), gather(static_cast<size_t>(N * H));
  std::vector<double> w(static_cast<size_t>(N * H), 0.0);
  for (int64_t n = 0; n < N; ++n) {
    own[n * H] = gather[n * H] = selected[n];
    for (int64_t j = 0; j < K; ++j) {
      const bool ok = o.valid[n * K + j];
      gather[n * H + 1 + j] = ok ? cand.rows[n * K + j] : selected[n];
      own[n * H + 1 + j] = ok ? cand.rows[n * K + j] : -1;
    }
    w[n * H] = o.target[n] >= 0 ? 0.5 : 1.0;
    if (o.target[n] >= 0) w[n * H + o.target[n]] += 0.5;
  }
  Tensor g = Tensor::from(gather, {N * H}, dev), neg = Tensor::from(negatives, {S}, dev);
  Tensor b_own = ops::reshape(ops::gather_rows(t.b, g), {N, H}), b_neg = ops::gather_rows(t.b, neg);
  if (shifts) {
    b_own = ops::add(b_own, Tensor::of(shifts->own, {N, H}, x.dtype(), dev));
    b_neg = ops::add(b_neg, Tensor::of(shifts->negatives, {S, 1}, x.dtype(), dev));
  }
  return ops::candidate_softmax(x, ops::reshape(ops::gather_rows(t.W, g), {N, H, P}), b_own,
                                ops::gather_rows(t.W, neg), b_neg, Tensor::from(own, {N, H}, dev), neg,
                                Tensor::of(w, {N, H}, x.dtype(), dev));
}

Tensor sense_translation_loss_unfused(const Tensor& x, const SenseTable& t, const std::vector<int32_t>& selected,
                                      const TranslationCandidates& cand, const std::vector<int32_t>& negatives,
                                      const TranslationShifts* shifts) {
  check_sizes(x, selected, cand);
  const int64_t N = x.dim(0), P = x.dim(1), K = cand.per_token, S = static_cast<int64_t>(negatives.size());
  check_shifts(shifts, N, K, S);
  // The shifts of each token's own rows as [N, 1 + K]: column 0 the selected row's.
  Tensor own_shift = shifts ? Tensor::of(shifts->own, {N, 1 + K}, x.dtype(), x.device()) : Tensor();
  const Device dev = x.device();
  const DType dt = x.dtype();
  const double kInf = std::numeric_limits<double>::infinity();
  Tensor sel = Tensor::from(selected, {N}, dev);
  Tensor l_true = ops::add(ops::sum(ops::mul(x, ops::gather_rows(t.W, sel)), 1, true), ops::gather_rows(t.b, sel));
  if (shifts) l_true = ops::add(l_true, ops::slice(own_shift, 1, 0, 1));
  std::vector<Tensor> parts = {l_true};
  std::vector<double> target(static_cast<size_t>(N * (1 + K + S)), 0.0);
  const OwnRows o = own_rows(selected, cand);
  if (K > 0) {
    Tensor rows = Tensor::from(cand.rows, {N * K}, dev);
    Tensor w = ops::reshape(ops::gather_rows(t.W, rows), {N, K, P});
    Tensor l_dict = ops::add(ops::sum(ops::mul(w, ops::reshape(x, {N, 1, P})), 2),
                             ops::reshape(ops::gather_rows(t.b, rows), {N, K}));
    if (shifts) l_dict = ops::add(l_dict, ops::slice(own_shift, 1, 1, 1 + K));
    std::vector<uint8_t> invalid(o.valid.size());
    for (size_t j = 0; j < invalid.size(); ++j) invalid[j] = !o.valid[j];
    parts.push_back(ops::masked_fill(l_dict, Tensor::from(invalid, {N, K}, dev), -kInf));
  }
  if (S > 0) {
    Tensor neg = Tensor::from(negatives, {S}, dev);
    Tensor row = ops::reshape(ops::gather_rows(t.b, neg), {1, S});
    if (shifts) row = ops::add(row, Tensor::of(shifts->negatives, {1, S}, dt, dev));
    Tensor l_neg = ops::add(ops::matmul(x, ops::gather_rows(t.W, neg), false, true), row);
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
    target[n * (1 + K + S)] = o.target[n] >= 0 ? 0.5 : 1.0;
    if (o.target[n] >= 0) target[n * (1 + K + S) + o.target[n]] += 0.5;
  }
  return ops::soft_cross_entropy(ops::concat(parts, 1), Tensor::of(target, {N, 1 + K + S}, dt, dev));
}

}  // namespace sa
