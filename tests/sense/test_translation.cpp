// The sense-level translation loss: candidates and the best translation sense, the loss against a
// hand computation, its f64 gradient check, and no NaN on self-translations.
#include <gtest/gtest.h>

#include <set>

#include "tests/test_util.h"

#include <cmath>
#include <random>

#include "sense/sense_softmax.h"
#include "sense/translation.h"

namespace sa {
namespace {

Tensor eye(int n) {
  std::vector<double> v(static_cast<size_t>(n * n), 0.0);
  for (int i = 0; i < n; ++i) v[i * n + i] = 1;
  return Tensor::of(v, {n, n}, DType::F64);
}

// Vocabulary of 6 with C = 3 (senses 1 and 2 after warm-up); 1 -> {2, 3}, 5 -> {5} (itself).
struct Fixture {
  SenseTable t{6, 3, 4, 2, Device::cpu(), DType::F64};
  TranslationTable dict;
  Fixture() {
    t.end_warmup(false);
    t.enabled[t.row(3, 2)] = 0;  // a pruned sense is no candidate
    dict.per_word = 4;
    dict.ids.assign(6 * 4, -1);
    dict.ids[1 * 4 + 0] = 2, dict.ids[1 * 4 + 1] = 3, dict.ids[5 * 4 + 0] = 5;
    // Centers along the axes: row(2,1) +x, row(2,2) +y, row(3,1) -x, row(5,1) +z, row(5,2) -z.
    std::vector<double> c(static_cast<size_t>(t.rows() * 4), 0.0);
    c[t.row(2, 1) * 4 + 0] = 1, c[t.row(2, 2) * 4 + 1] = 1, c[t.row(3, 1) * 4 + 0] = -1;
    c[t.row(5, 1) * 4 + 2] = 1, c[t.row(5, 2) * 4 + 2] = -1;
    t.centers.copy_from(Tensor::of(c, {t.rows(), 4}, DType::F64));
  }
};

TEST(Translation, CandidatesAndTheBestSense) {
  Fixture f;
  // Tokens: word 1 with a context along +y, word 1 along -x, word 0 (no translation), word 5 along -z.
  Tensor ctx = Tensor::of({0, 2, 0, 0, -1, 0.1, 0, 0, 1, 1, 1, 1, 0, 0, -3, 0}, {4, 4}, DType::F64);
  TranslationCandidates c = translation_candidates(f.t, f.dict, {1, 1, 0, 5}, ctx, eye(4));
  ASSERT_EQ(c.per_token, 12);
  // Token 0: candidates in order (translation k, sense s): (2,0) off, (2,1), (2,2), (3,0) off, (3,1), (3,2) pruned.
  std::vector<uint8_t> v0(c.valid.begin(), c.valid.begin() + 12);
  EXPECT_EQ(v0, (std::vector<uint8_t>{0, 1, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(c.rows[1], f.t.row(2, 1));
  EXPECT_EQ(c.best, (std::vector<int32_t>{2, 4, -1, 2}));  // +y -> (2,2); -x -> (3,1); none; -z -> (5,2)
  // By language: second-language tokens read ids_l2 (here word 1 translates to 5 only there).
  f.dict.ids_l2.assign(6 * 4, -1);
  f.dict.ids_l2[1 * 4 + 0] = 5;
  const std::vector<uint8_t> lang = {0, 1, 0, 1};
  TranslationCandidates l = translation_candidates(f.t, f.dict, {1, 1, 0, 5}, ctx, eye(4), {}, &lang);
  EXPECT_EQ(l.best, (std::vector<int32_t>{2, 1, -1, -1}));  // token 1: a tie between (5,1) and (5,2), the first
  EXPECT_EQ(l.rows[12 + 1], f.t.row(5, 1));
}

// With selection_mean = "word" the choice is made in each word's own frame: the token's context
// minus its word's mean (sense 0's center), each candidate minus its translation's mean. Raw
// cosines pick (2,1), centring the candidates on the source word's mean would pick (2,2), and the
// translations' own means pick (3,1).
TEST(Translation, BestSenseIsCentredOnEachWordsMean) {
  Fixture f;
  auto set_center = [&](int32_t row, std::vector<double> v) {
    std::vector<double> c = f.t.centers.values();
    std::copy(v.begin(), v.end(), c.begin() + row * 4);
    f.t.centers.copy_from(Tensor::of(c, {f.t.rows(), 4}, DType::F64));
  };
  set_center(f.t.row(1, 0), {10, 0, 0, 0});  // the source word's mean
  set_center(f.t.row(2, 0), {0, 0, 0, 3});
  set_center(f.t.row(3, 0), {-1, -5, 0, 0});
  Tensor ctx = Tensor::of({10, 1, 0, 0}, {1, 4}, DType::F64);
  EXPECT_EQ(translation_candidates(f.t, f.dict, {1}, ctx, eye(4)).best, (std::vector<int32_t>{1}));
  SenseOptions o;
  o.selection_mean = SenseOptions::SelectionMean::Word;
  const WordMeans word_means = [&](const std::vector<int32_t>& w) { return selection_mean(f.t, o, Tensor(), w); };
  EXPECT_EQ(translation_candidates(f.t, f.dict, {1}, ctx, eye(4), word_means).best, (std::vector<int32_t>{4}));
  const WordMeans source_mean = [&](const std::vector<int32_t>&) { return selection_mean(f.t, o, Tensor(), {1}); };
  EXPECT_EQ(translation_candidates(f.t, f.dict, {1}, ctx, eye(4), source_mean).best, (std::vector<int32_t>{2}));
}

TEST(Translation, LossMatchesAHandComputation) {
  Fixture f;
  Tensor ctx = Tensor::of({0, 2, 0, 0, 0, 0, 1, 0}, {2, 4}, DType::F64);
  TranslationCandidates c = translation_candidates(f.t, f.dict, {1, 0}, ctx, eye(4));
  Tensor x = Tensor::of({0.3, -0.2, 0.5, 0.1, -0.4, 0.2, 0.1, 0.3}, {2, 4}, DType::F64);
  const std::vector<int32_t> sel = {f.t.row(1, 1), f.t.row(0, 2)};
  const std::vector<int32_t> neg = {f.t.row(2, 1), f.t.row(4, 1), f.t.row(1, 1)};  // a candidate, a plain row, a hit
  std::vector<double> l = sense_translation_loss(x, f.t, sel, c, neg).values();
  std::vector<double> W = f.t.W.values(), b = f.t.b.values(), xv = x.values();
  auto logit = [&](int n, int32_t r) {
    double s = b[r];
    for (int k = 0; k < 4; ++k) s += xv[n * 4 + k] * W[r * 4 + k];
    return s;
  };
  // Row 0: denominator = selected + candidates (2,1), (2,2), (3,1) + negative (4,1) only.
  double z = 0;
  for (int32_t r : {sel[0], f.t.row(2, 1), f.t.row(2, 2), f.t.row(3, 1), f.t.row(4, 1)}) z += std::exp(logit(0, r));
  const double want0 = -0.5 * (logit(0, sel[0]) - std::log(z)) - 0.5 * (logit(0, f.t.row(2, 2)) - std::log(z));
  EXPECT_NEAR(l[0], want0, 1e-12);
  // Row 1: no translation, plain softmax over the selected row and the three negatives.
  z = 0;
  for (int32_t r : {sel[1], neg[0], neg[1], neg[2]}) z += std::exp(logit(1, r));
  EXPECT_NEAR(l[1], -(logit(1, sel[1]) - std::log(z)), 1e-12);
}

// Log-uniform negatives: every logit of the softmax (selected row, candidates, negatives) gets its
// word's log-Q shift, as in TF's sampled softmax.
TEST(Translation, LogQShiftsEnterEveryLogit) {
  Fixture f;
  Tensor ctx = Tensor::of({0, 2, 0, 0}, {1, 4}, DType::F64);
  TranslationCandidates c = translation_candidates(f.t, f.dict, {1}, ctx, eye(4));
  Tensor x = Tensor::of({0.3, -0.2, 0.5, 0.1}, {1, 4}, DType::F64);
  const std::vector<int32_t> sel = {f.t.row(1, 1)};
  const std::vector<int32_t> neg = {f.t.row(4, 1), f.t.row(0, 2)};
  // Own rows: the selected one, then candidate k * C + s for translation k, sense s: (2,1), (2,2)
  // and (3,1) are valid (sense 0 ends with the warm-up, (3,2) is pruned).
  TranslationShifts sh{std::vector<double>(1 + c.per_token, 0.0), {-0.7, 1.3}};
  sh.own[0] = 0.4, sh.own[1 + 1] = -1.1, sh.own[1 + 2] = 2.0, sh.own[1 + 4] = 0.25;
  ASSERT_EQ(c.rows[1], f.t.row(2, 1));
  ASSERT_EQ(c.rows[2], f.t.row(2, 2));
  ASSERT_EQ(c.rows[4], f.t.row(3, 1));
  std::vector<double> W = f.t.W.values(), b = f.t.b.values(), xv = x.values();
  auto logit = [&](int32_t r, double shift) {
    double s = b[r] + shift;
    for (int k = 0; k < 4; ++k) s += xv[k] * W[r * 4 + k];
    return s;
  };
  const double ls = logit(sel[0], 0.4), l21 = logit(f.t.row(2, 1), -1.1), l22 = logit(f.t.row(2, 2), 2.0),
               l31 = logit(f.t.row(3, 1), 0.25), n0 = logit(neg[0], -0.7), n1 = logit(neg[1], 1.3);
  const double lz = std::log(std::exp(ls) + std::exp(l21) + std::exp(l22) + std::exp(l31) + std::exp(n0) + std::exp(n1));
  ASSERT_EQ(c.best[0], 2);  // ctx along +y: the center of (2,2)
  const double want = -0.5 * (ls - lz) - 0.5 * (l22 - lz);
  EXPECT_NEAR(sense_translation_loss(x, f.t, sel, c, neg, &sh).item(), want, 1e-12);
  EXPECT_NEAR(sense_translation_loss_unfused(x, f.t, sel, c, neg, &sh).item(), want, 1e-12);
  // Without shifts the value differs: the shifts are not silently dropped.
  EXPECT_GT(std::abs(sense_translation_loss(x, f.t, sel, c, neg).item() - want), 1e-3);
}

// translation_shifts gives each own row the -log expected count of its word in the draw, through
// the map to the draw's word ids, and the negatives the draw's own shifts.
TEST(Translation, ShiftsOfALogUniformDraw) {
  Fixture f;
  std::mt19937_64 rng(5);
  const SenseNegatives neg = sample_log_uniform_senses(f.t, 4, {1}, rng);
  ASSERT_TRUE(neg.shifted());
  Tensor ctx = Tensor::of({0, 2, 0, 0}, {1, 4}, DType::F64);
  const TranslationCandidates c = translation_candidates(f.t, f.dict, {1}, ctx, eye(4));
  const std::vector<int32_t> sel = {f.t.row(1, 1)};
  const TranslationShifts plain = translation_shifts(neg, f.t, sel, c);
  EXPECT_EQ(plain.negatives, neg.shift);
  EXPECT_DOUBLE_EQ(plain.own[0], neg.word_shift(1));
  EXPECT_DOUBLE_EQ(plain.own[0], neg.true_shift[0]);
  EXPECT_DOUBLE_EQ(plain.own[1 + 1], neg.word_shift(2));  // candidate (2,1)
  EXPECT_DOUBLE_EQ(plain.own[1 + 4], neg.word_shift(3));  // candidate (3,1)
  EXPECT_NE(neg.word_shift(1), neg.word_shift(3));    // log-uniform: frequent ranks are likelier
  const TranslationShifts mapped = translation_shifts(neg, f.t, sel, c, [](int32_t w) { return 5 - w; });
  EXPECT_DOUBLE_EQ(mapped.own[0], neg.word_shift(4));
  EXPECT_DOUBLE_EQ(mapped.own[1 + 1], neg.word_shift(3));
}

TEST(Translation, GradientMatchesFiniteDifferencesAndSelfTranslationHasNoNaN) {
  Fixture f;
  std::vector<double> xv(4 * 4);
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = std::cos(0.7 * i);
  Tensor ctx = Tensor::of({0, 2, 0, 0, -1, 0.1, 0, 0, 1, 1, 1, 1, 0, 0, -3, 0}, {4, 4}, DType::F64);
  TranslationCandidates c = translation_candidates(f.t, f.dict, {1, 1, 0, 5}, ctx, eye(4));
  Tensor x = Tensor::of(xv, {4, 4}, DType::F64).set_requires_grad();
  // Token 3 is word 5 translating to itself: its selected row is also its best candidate and a negative.
  const std::vector<int32_t> sel = {f.t.row(1, 1), f.t.row(1, 2), f.t.row(0, 1), f.t.row(5, 2)};
  const std::vector<int32_t> neg = {f.t.row(5, 2), f.t.row(2, 2), f.t.row(4, 1), f.t.row(0, 2), f.t.row(1, 1)};
  set_check_numerics(true);
  auto loss = [&] { return ops::sum(sense_translation_loss(x, f.t, sel, c, neg)); };
  x.zero_grad(), f.t.W.zero_grad(), f.t.b.zero_grad();
  Tensor total = loss();
  EXPECT_TRUE(std::isfinite(total.item()));
  backward(total);
  set_check_numerics(false);
  std::vector<std::pair<Tensor, std::vector<double>>> checks = {
      {x, x.grad().values()},
      {f.t.W, f.t.W.sparse_grad().to_dense(f.t.rows(), 4).values()},
      {f.t.b, f.t.b.sparse_grad().to_dense(f.t.rows(), 1).values()}};
  for (auto& [p, analytic] : checks) {
    double* d = p.data<double>();
    for (int64_t e = 0; e < p.numel(); ++e) {
      NoGrad ng;
      const double keep = d[e];
      d[e] = keep + 1e-6;
      const double up = loss().item();
      d[e] = keep - 1e-6;
      const double down = loss().item();
      d[e] = keep;
      ASSERT_NEAR(analytic[e], (up - down) / 2e-6, 1e-7 + 1e-6 * std::abs(analytic[e])) << describe(p) << " element " << e;
    }
  }
}

// The fused translation loss (ops::candidate_softmax with 1 + T*C own rows) equals the unfused
// reference on the loss and every gradient: random dictionaries with self-translations, absent
// candidates, negatives that hit a candidate, and more rows than one CPU chunk.
TEST(Translation, FusedEqualsUnfusedOnCpuAndGpu) {
  for (Device dev : testing::cpu_and_gpu("Translation.FusedEqualsUnfused")) {
    const DType dt = dev.is_cuda() ? DType::F32 : DType::F64;
    const int V = 300, C = 3, P = 6, N = 150;
    SenseTable t(V, C, P, 5, dev, dt);
    t.end_warmup(false);
    std::mt19937_64 rng(3);
    for (int i = 0; i < 60; ++i) t.enabled[t.row(static_cast<int>(rng() % V), 1 + static_cast<int>(rng() % 2))] = 0;
    t.W.set_requires_grad().set_sparse_grad();
    t.b.set_requires_grad().set_sparse_grad();
    TranslationTable dict;
    dict.per_word = 4;
    dict.ids.assign(static_cast<size_t>(V) * 4, -1);
    for (int w = 0; w < V; ++w)
      for (int k = 0; k < static_cast<int>(rng() % 5); ++k) dict.ids[w * 4 + k] = k == 0 && w % 7 == 0 ? w : static_cast<int>(rng() % V);
    std::vector<int32_t> words, sel;
    for (int n = 0; n < N; ++n) {
      words.push_back(static_cast<int>(rng() % 40));
      sel.push_back(t.row(words.back(), 1 + static_cast<int>(rng() % 2)));
    }
    std::vector<double> v(static_cast<size_t>(N) * P), cv(v.size());
    for (auto& e : v) e = std::uniform_real_distribution<double>(-1, 1)(rng);
    for (auto& e : cv) e = std::uniform_real_distribution<double>(-1, 1)(rng);
    std::vector<double> pv(static_cast<size_t>(P) * 3);
    for (auto& e : pv) e = std::uniform_real_distribution<double>(-1, 1)(rng);
    const TranslationCandidates all =
        translation_candidates(t, dict, words, Tensor::of(cv, {N, P}, dt, dev), Tensor::of(pv, {P, 3}, dt, dev));
    // Every enabled row drawn, repeated to 16,000 negatives: CPU chunks of 2^21 / 16,000 = 131 rows,
    // so 150 rows take two; plus a candidate of row 0.
    std::vector<int32_t> neg = sample_enabled_rows(t, 2000, rng);
    for (size_t i = 0; neg.size() < 16000; ++i) neg.push_back(neg[i]);
    for (int j = 0; j < all.per_token; ++j)
      if (all.valid[j]) neg.push_back(all.rows[j]);
    Tensor x = Tensor::of(v, {N, P}, dt, dev).set_requires_grad();
    // translation_candidates = "all" and "best" (the losing candidates leave the softmax; drawn as
    // negatives they are ordinary rows).
    for (bool best_only : {false, true}) {
    SCOPED_TRACE(best_only ? "best" : "all");
    TranslationCandidates c = all;
    if (best_only) {
      keep_best_only(c);
      for (int n = 0; n < N; ++n) {
        int valid = 0;
        for (int j = 0; j < c.per_token; ++j) valid += c.valid[n * c.per_token + j];
        ASSERT_EQ(valid, c.best[n] >= 0 ? 1 : 0);
      }
    }
    // With and without log-Q shifts (log-uniform negatives): random ones here, any value must do.
    TranslationShifts sh{std::vector<double>(static_cast<size_t>(N) * (1 + c.per_token)), std::vector<double>(neg.size())};
    for (auto& e : sh.own) e = std::uniform_real_distribution<double>(-3, 3)(rng);
    for (auto& e : sh.negatives) e = std::uniform_real_distribution<double>(-3, 3)(rng);
    for (const TranslationShifts* shifts : std::vector<const TranslationShifts*>{nullptr, &sh}) {
    SCOPED_TRACE(shifts ? "shifted" : "unshifted");
    auto grads = [&](bool fused) {
      x.zero_grad(), t.W.zero_grad(), t.b.zero_grad();
      Tensor l = fused ? sense_translation_loss(x, t, sel, c, neg, shifts)
                       : sense_translation_loss_unfused(x, t, sel, c, neg, shifts);
      backward(ops::sum(l));
      return std::vector<std::vector<double>>{l.values(), x.grad().values(), t.W.sparse_grad().to_dense(t.rows(), P).values(),
                                              t.b.sparse_grad().to_dense(t.rows(), 1).values()};
    };
    auto a = grads(true), b = grads(false);
    int with_translation = 0;
    for (int32_t best : c.best) with_translation += best >= 0;
    ASSERT_GT(with_translation, N / 4);
    testing::expect_outputs_near(a, b, dt == DType::F64 ? 1e-12 : 2e-5);
    }
    if (best_only) {
      // With 50 negatives, a losing candidate of some token that is not a negative and no token's
      // selected row or best candidate gets no gradient.
      const std::vector<int32_t> few(neg.begin(), neg.begin() + 50);
      t.W.zero_grad(), t.b.zero_grad();
      backward(ops::sum(sense_translation_loss(x, t, sel, c, few)));
      const std::vector<double> gW = t.W.sparse_grad().to_dense(t.rows(), P).values();
      std::set<int32_t> touched(few.begin(), few.end());
      touched.insert(sel.begin(), sel.end());
      for (int n = 0; n < N; ++n)
        if (c.best[n] >= 0) touched.insert(c.rows[n * c.per_token + c.best[n]]);
      int checked = 0;
      for (size_t j = 0; j < all.rows.size(); ++j) {
        if (!all.valid[j] || touched.count(all.rows[j])) continue;
        for (int p = 0; p < P; ++p) EXPECT_EQ(gW[static_cast<size_t>(all.rows[j]) * P + p], 0.0);
        ++checked;
      }
      EXPECT_GT(checked, 0);
    }
    }
  }
}

}  // namespace
}  // namespace sa

namespace sa {
namespace {

// A word that translates to itself has its selected row among its candidates: the row enters the
// softmax once, and the best candidate's weight joins the selected row's, so the loss can reach 0
// (counted twice, each copy's probability was capped at 1/2: loss at least log 2).
TEST(Translation, SelfTranslationCountsTheRowOnce) {
  Fixture f;
  Tensor ctx = Tensor::of({0, 0, -3, 0}, {1, 4}, DType::F64);  // along -z: best (5,2)
  TranslationCandidates c = translation_candidates(f.t, f.dict, {5}, ctx, eye(4));
  ASSERT_EQ(c.best[0], 2);
  Tensor x = Tensor::of({0.3, -0.2, 0.5, 0.1}, {1, 4}, DType::F64);
  const std::vector<int32_t> sel = {f.t.row(5, 2)}, neg = {f.t.row(4, 1)};
  std::vector<double> W = f.t.W.values(), b = f.t.b.values(), xv = x.values();
  auto logit = [&](int32_t r) {
    double s = b[r];
    for (int k = 0; k < 4; ++k) s += xv[k] * W[r * 4 + k];
    return s;
  };
  double z = 0;
  for (int32_t r : {sel[0], f.t.row(5, 1), f.t.row(4, 1)}) z += std::exp(logit(r));
  const double want = -(logit(sel[0]) - std::log(z));
  EXPECT_NEAR(sense_translation_loss(x, f.t, sel, c, neg).item(), want, 1e-12);
  EXPECT_NEAR(sense_translation_loss_unfused(x, f.t, sel, c, neg).item(), want, 1e-12);
}

}  // namespace
}  // namespace sa
