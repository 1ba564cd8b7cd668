#include "sense/selection.h"

#include <cmath>
#include <map>

#include "engine/core/scalar_math.h"

namespace sa {

SelectionSpace::SelectionSpace(const SenseTable& t, const Tensor& ctx, const std::vector<int32_t>& rows,
                               const Tensor& proj, const Tensor& mean, bool on_host, const Tensor& center_mean) {
  NoGrad ng;
  const int64_t N = ctx.dim(0);
  SA_CHECK(N > 0 && static_cast<int64_t>(rows.size()) % N == 0, "selection: {} candidate rows for {} contexts",
           rows.size(), N);
  per_context = static_cast<int64_t>(rows.size()) / N;
  const Device dev = ctx.device();
  Tensor p = proj.to(ctx.dtype()).to(dev);
  Tensor centers = ops::gather_rows(t.centers, Tensor::from(rows, {N * per_context}, dev)).to(ctx.dtype());
  if (on_host) center_sq = ops::sum(ops::square(centers), 1).values();
  Tensor x = ctx;
  if (center_mean.defined()) {
    if (mean.defined()) x = ops::sub(x, mean.to(ctx.dtype()).to(dev));
    centers = ops::sub(centers, center_mean.to(ctx.dtype()).to(dev));
  } else if (mean.defined()) {
    Tensor m = mean.to(ctx.dtype()).to(dev);
    x = ops::sub(x, m);
    if (m.rank() == 2 && m.dim(0) == N && N > 1) {  // one mean per context, for its K centers
      const int64_t P = ctx.dim(1);
      centers = ops::reshape(ops::sub(ops::reshape(centers, {N, per_context, P}), ops::reshape(m, {N, 1, P})),
                             {N * per_context, P});
    } else {
      centers = ops::sub(centers, m);
    }
  }
  U = ops::matmul(x, p), V = ops::matmul(centers, p);
  if (on_host) u = U.values(), v = V.values();
  d = p.dim(1);
}

std::vector<int32_t> host_rows(const Tensor& rows) {
  const std::vector<double> v = rows.values();
  return std::vector<int32_t>(v.begin(), v.end());
}

double SelectionSpace::cosine(int64_t n, const double* w) const { return math::selection_cosine(context(n), w, d); }

SenseCandidates sense_candidates(const SenseTable& t, const std::vector<int32_t>& words) {
  const size_t C = static_cast<size_t>(t.n_context());
  SenseCandidates c;
  c.rows.resize(words.size() * C);
  c.enabled.resize(words.size() * C);
  for (size_t n = 0; n < words.size(); ++n)
    for (size_t s = 0; s < C; ++s) {
      c.rows[n * C + s] = t.row(words[n], static_cast<int>(s));
      c.enabled[n * C + s] = t.is_enabled(c.rows[n * C + s]) ? 1 : 0;
    }
  return c;
}

Tensor select_sense_rows(const SenseTable& t, const Tensor& ctx, const std::vector<int32_t>& words, const Tensor& proj,
                         const Tensor& mean) {
  const int64_t N = ctx.dim(0), C = t.n_context();
  SA_CHECK(static_cast<int64_t>(words.size()) == N, "select_senses: {} words for {} context vectors", words.size(), N);
  const SenseCandidates sc = sense_candidates(t, words);
  const SelectionSpace space(t, ctx, sc.rows, proj, mean, false);
  const Device dev = ctx.device();
  return ops::select_rows(space.U, space.V, Tensor::from(sc.rows, {N * C}, dev), Tensor::from(sc.enabled, {N * C}, dev));
}

std::vector<int32_t> select_senses(const SenseTable& t, const Tensor& ctx, const std::vector<int32_t>& words,
                                   const Tensor& proj, const Tensor& mean, bool seed_empty) {
  if (!seed_empty) return host_rows(select_sense_rows(t, ctx, words, proj, mean));
  const int64_t N = ctx.dim(0), C = t.n_context();
  SA_CHECK(static_cast<int64_t>(words.size()) == N, "select_senses: {} words for {} context vectors", words.size(), N);
  const SenseCandidates sc = sense_candidates(t, words);
  const std::vector<int32_t>& cand = sc.rows;
  const SelectionSpace space(t, ctx, cand, proj, mean);
  std::vector<int32_t> sel(static_cast<size_t>(N));
  // Seeding (MacQueen): an empty enabled center is claimed by the next occurrence of its word, whose
  // projected context then stands for that center for the rest of this call.
  std::map<int32_t, int64_t> claimed;  // row -> occurrence that seeded it
  for (int64_t n = 0; n < N; ++n) {
    int32_t empty = -1;
    for (int64_t s = 0; s < C && empty < 0; ++s) {
      const int32_t r = cand[n * C + s];
      if (t.is_enabled(r) && space.center_sq[n * C + s] == 0.0 && !claimed.count(r)) empty = r;
    }
    if (empty >= 0) {
      claimed[empty] = n;
      sel[n] = empty;
      continue;
    }
    int32_t best = -1;
    double best_sim = -INFINITY;
    for (int64_t s = 0; s < C; ++s) {
      const int32_t r = cand[n * C + s];
      if (!t.is_enabled(r)) continue;
      auto seed = claimed.find(r);
      const double sim = space.cosine(n, seed != claimed.end() ? space.context(seed->second) : space.center(n, s));
      if (best < 0 || sim > best_sim) best = r, best_sim = sim;  // strict: ties keep the lowest sense
    }
    sel[n] = best >= 0 ? best : cand[n * C];
  }
  return sel;
}

namespace {

// The warm-up sense's row of each word: its center is the word's mean context.
std::vector<int32_t> sense0_rows(const SenseTable& t, const std::vector<int32_t>& words) {
  std::vector<int32_t> rows(words.size());
  for (size_t n = 0; n < words.size(); ++n) rows[n] = t.row(words[n], 0);
  return rows;
}

}  // namespace

Tensor selection_mean(const SenseTable& t, const SenseOptions& o, const Tensor& queue_mean,
                      const std::vector<int32_t>& words, const Tensor& batch_mean) {
  using M = SenseOptions::SelectionMean;
  if (o.selection_mean == M::Global) return queue_mean;
  if (o.selection_mean == M::None) return Tensor();
  NoGrad ng;
  Tensor word = ops::gather_rows(t.centers, Tensor::from(sense0_rows(t, words), {static_cast<int64_t>(words.size())},
                                                         t.centers.device()));
  if (o.selection_mean == M::Word) return word;
  SA_CHECK(batch_mean.defined(), "selection_mean = \"word_offset\" needs the mean of the contexts being selected");
  return ops::add(word, batch_mean.to(word.dtype()).to(word.device()));
}

void update_sense_centers(SenseTable& t, const SenseOptions& o, const Tensor& ctx, const Tensor& selected,
                          const std::vector<int32_t>& words) {
  using M = SenseOptions::SelectionMean;
  const bool warmup = !words.empty() && t.is_enabled(t.row(words[0], 0));
  NoGrad ng;
  // With word means in sense 0, the released update's decay of every row must spare them: they
  // are means, not cluster centers (only the warm-up's sense-0 centers are clusters).
  const bool word_means = o.selection_mean == M::Word || o.selection_mean == M::WordOffset;
  // During the warm-up sense 0 is the only sense: with word_offset its center holds the offset,
  // so the selection update (raw contexts) leaves it alone.
  if (!(warmup && o.selection_mean == M::WordOffset))
    update_centers(t, ctx, selected, o.sense_learning_rate, o.center_update, o.seed_centers(), word_means && !warmup);
  if (words.empty()) return;
  auto sense0 = [&] {
    return Tensor::from(sense0_rows(t, words), {static_cast<int64_t>(words.size())}, t.centers.device());
  };
  if (o.selection_mean == M::Word && !warmup)
    update_centers(t, ctx, sense0(), o.sense_learning_rate, SenseOptions::CenterUpdate::Paper);
  if (o.selection_mean == M::WordOffset)
    update_centers(t, ops::sub(ctx, ops::mean(ctx, 0, true)), sense0(), o.sense_learning_rate,
                   SenseOptions::CenterUpdate::Paper);
}

void update_sense_centers(SenseTable& t, const SenseOptions& o, const Tensor& ctx, const std::vector<int32_t>& selected,
                          const std::vector<int32_t>& words) {
  update_sense_centers(t, o, ctx, Tensor::from(selected, {static_cast<int64_t>(selected.size())}, t.centers.device()),
                       words);
}

void update_centers(SenseTable& t, const Tensor& ctx, const std::vector<int32_t>& rows, double a,
                    SenseOptions::CenterUpdate mode, bool seed_exact, bool spare_sense0) {
  update_centers(t, ctx, Tensor::from(rows, {static_cast<int64_t>(rows.size())}, t.centers.device()), a, mode,
                 seed_exact, spare_sense0);
}

void update_centers(SenseTable& t, const Tensor& ctx, const Tensor& rows, double a, SenseOptions::CenterUpdate mode,
                    bool seed_exact, bool spare_sense0) {
  NoGrad ng;
  const int64_t N = ctx.dim(0), P = ctx.dim(1);
  SA_CHECK(rows.rank() == 1 && rows.dim(0) == N && rows.dtype() == DType::I32,
           "update_centers: rows {} for {} context vectors (expected i32 [{}])", describe(rows), N, N);
  const Device dev = t.centers.device();
  const DType dt = t.centers.dtype();
  // The sum and count of the contexts of each selected row, on the device: the contexts with a
  // column of ones, coalesced by row. Each sum adds its contexts in their order (deterministic).
  // The device may pad the distinct rows with id -1 and a zero count: gather reads such a row as
  // zeros and scatter drops it, and its mean divides by 1, not 0 (the CPU never pads).
  const Tensor counted = ops::concat({ctx.to(dt).to(dev), Tensor::full({N, 1}, 1.0, dt, dev)}, 1);
  // Named members, not a structured binding: the lambdas below capture ids (clang 14 rejects that).
  const auto coalesced = backend(dev).coalesce_rows(rows.to(dev), counted, true);
  const Tensor &ids = coalesced.first, &summed = coalesced.second;
  const Tensor sums = ops::slice(summed, 1, 0, P), count = ops::slice(summed, 1, P, P + 1);  // [U, P], [U, 1]
  const Tensor mean = ops::div(sums, ops::clip(count, 1.0, static_cast<double>(N)));
  // seed_exact: a center still exactly zero (never seeded) becomes the mean of its first contexts,
  // as online k-means seeds with its first points. The updates below would make it a * mean,
  // which only works when the selection space ignores scale (no mean subtracted). Seeding selects
  // on the host anyway, so reading which rows are unseeded costs no extra wait.
  Tensor seeded;
  if (seed_exact) {
    std::vector<double> zero = ops::sum(ops::square(ops::gather_rows(t.centers, ids)), 1).values();
    for (double& v : zero) v = v == 0.0 ? 1.0 : 0.0;
    seeded = Tensor::of(zero, {ids.numel(), 1}, dt, dev);
  }
  // c += w * (mean - c) on the selected rows, w [U, 1]
  auto move_toward_mean = [&](const Tensor& w) {
    backend(dev).scatter_add_rows(ops::mul(ops::sub(mean, ops::gather_rows(t.centers, ids)), w), ids, t.centers);
  };
  if (mode == SenseOptions::CenterUpdate::Paper) {
    move_toward_mean(Tensor::full({1, 1}, a, dt, dev));
  } else if (mode == SenseOptions::CenterUpdate::PerToken) {
    // Algorithm 1 moves a center one alpha step per token: k tokens that chose it move it by
    // 1 - (1 - alpha)^k of the way to their mean (exact when they agree).
    move_toward_mean(ops::add_scalar(ops::scale(ops::exp(ops::scale(count, std::log1p(-a))), -1.0), 1.0));
  } else {
    if (spare_sense0) {  // one pass: every row times (1 - a), sense-0 rows times 1
      std::vector<double> f(static_cast<size_t>(t.rows()), 1.0 - a);
      for (int w = 0; w < t.vocab(); ++w) f[static_cast<size_t>(t.row(w, 0))] = 1.0;
      const Tensor factor = Tensor::of(f, {t.rows(), 1}, dt, dev);
      backend(dev).binary(BinaryOp::Mul, t.centers, factor, t.centers, make_broadcast_plan(t.centers.shape(), t.centers.shape(), factor.shape()));
    } else {
      backend(dev).unary(UnaryOp::Scale, t.centers, t.centers, 1.0 - a, 0);  // every center decays, as released
    }
    // selected rows add a * sum / (count + 1e-5)
    backend(dev).scatter_add_rows(ops::mul(sums, ops::div(Tensor::full({1, 1}, a, dt, dev), ops::add_scalar(count, 1e-5))), ids,
                        t.centers);
  }
  if (seed_exact) move_toward_mean(seeded);
}

}  // namespace sa
