// The sense-aware softmax pieces: selection, projection, center updates, pruning, warm-up, masks
// and the gradient of the sense loss.
#include <gtest/gtest.h>

#include "tests/test_util.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <random>
#include <set>

#include "engine/core/device_counters.h"
#include "layers/softmax.h"
#include "sense/projection.h"
#include "sense/pruning.h"
#include "sense/selection.h"
#include "sense/sense_head.h"
#include "sense/sense_softmax.h"

namespace sa {
namespace {

// A table whose word 0 has sense centers along known directions of a 4-d space.
SenseTable table_with_centers(std::vector<std::vector<double>> centers_of_word0) {
  SenseTable t(3, 4, 4, 1, Device::cpu(), DType::F64);
  std::vector<double> c = t.centers.values();
  for (size_t s = 0; s < centers_of_word0.size(); ++s)
    for (int k = 0; k < 4; ++k) c[s * 4 + k] = centers_of_word0[s][k];
  t.centers = Tensor::of(c, {12, 4}, DType::F64);
  t.end_warmup(false);
  return t;
}

Tensor eye4() { return Tensor::of({1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1}, {4, 4}, DType::F64); }

TEST(SenseSelection, PicksTheNearestEnabledCenterByCosine) {
  SenseTable t = table_with_centers({{0, 0, 0, 1}, {5, 0, 0, 0}, {0, 3, 0, 0}, {-1, -1, 0, 0}});
  Tensor ctx = Tensor::of({0.9, 0.1, 0, 0,   // near sense 1
                           0.2, 7.0, 0, 0,   // near sense 2 (scale does not matter)
                           -1, -1.2, 0, 0,   // near sense 3
                           0, 0, 0, 1},      // nearest is sense 0, which is disabled after warm-up
                          {4, 4}, DType::F64);
  std::vector<int32_t> sel = select_senses(t, ctx, {0, 0, 0, 0}, eye4());
  EXPECT_EQ(sel, (std::vector<int32_t>{1, 2, 3, 1}));  // the last: best enabled cosine is 0, tie -> lowest
  t.enabled[2] = 0;  // disable sense 2: never selected
  sel = select_senses(t, ctx, {0, 0, 0, 0}, eye4());
  EXPECT_NE(sel[1], 2);
  // Projection: in a space that keeps only axis 0, senses 1 (+x) and 3 (-x) are separated by sign.
  Tensor p = Tensor::of({1, 0, 0, 0}, {4, 1}, DType::F64);
  t.enabled[2] = 1;
  sel = select_senses(t, Tensor::of({0.1, 9, 0, 0, -0.1, 9, 0, 0}, {2, 4}, DType::F64), {0, 0}, p);
  EXPECT_EQ(sel, (std::vector<int32_t>{1, 3}));
}

// selection_mean = "word": contexts and centers share a large word offset (sense 0's center, the
// word's mean context); raw cosines are ruled by it and pick the center with the smaller residual,
// while the word-centred space compares the residual directions. After the warm-up the word mean
// keeps following the word's contexts.
// The selection kernel against a plain loop over the same numbers: random candidates, disabled
// ones, an exact tie (the first wins), a token with none enabled (its first candidate), in f32
// and f64, on the CPU and (with a GPU) on CUDA. The cosines are summed in double on both.
TEST(SenseSelection, SelectRowsKernelMatchesALoopOnCpuAndGpu) {
  std::mt19937_64 rng(17);
  std::normal_distribution<double> g;
  const int64_t N = 300, K = 6, d = 16;
  std::vector<double> u(N * d), v(N * K * d);
  for (double& x : u) x = g(rng);
  for (double& x : v) x = g(rng);
  std::vector<int32_t> rows(N * K);
  std::vector<uint8_t> enabled(N * K);
  for (int64_t i = 0; i < N * K; ++i) rows[i] = static_cast<int32_t>(1000 + i), enabled[i] = rng() % 4 != 0;
  for (int64_t k = 0; k < d; ++k) v[(1 * K + 3) * d + k] = v[(1 * K + 1) * d + k];  // token 1: senses 1 and 3 tie
  enabled[1 * K + 1] = enabled[1 * K + 3] = 1;
  for (int64_t k = 0; k < d; ++k) u[1 * d + k] = v[(1 * K + 1) * d + k];           // ... and are its best
  for (int64_t j = 0; j < K; ++j) enabled[2 * K + j] = 0;                          // token 2: none enabled
  for (DType dt : {DType::F32, DType::F64}) {
    // the expected rows from the values as the tensors hold them (f32 rounds first)
    const std::vector<double> uu = Tensor::of(u, {N, d}, dt).values(), vv = Tensor::of(v, {N * K, d}, dt).values();
    std::vector<double> want(N);
    for (int64_t n = 0; n < N; ++n) {
      int64_t best = -1;
      double best_sim = 0, un = 0;
      for (int64_t k = 0; k < d; ++k) un += uu[n * d + k] * uu[n * d + k];
      for (int64_t j = 0; j < K; ++j) {
        if (!enabled[n * K + j]) continue;
        double dot = 0, vn = 0;
        for (int64_t k = 0; k < d; ++k) dot += uu[n * d + k] * vv[(n * K + j) * d + k], vn += vv[(n * K + j) * d + k] * vv[(n * K + j) * d + k];
        const double sim = dot / (std::sqrt(vn) + 1e-6) / (std::sqrt(un) + 1e-6);
        if (best < 0 || sim > best_sim) best = j, best_sim = sim;
      }
      want[n] = rows[n * K + std::max<int64_t>(best, 0)];
    }
    EXPECT_EQ(want[1], rows[1 * K + 1]);
    EXPECT_EQ(want[2], rows[2 * K]);
    for (Device dev : testing::cpu_and_gpu("select_rows")) {
      const std::vector<double> got =
          ops::select_rows(Tensor::of(u, {N, d}, dt, dev), Tensor::of(v, {N * K, d}, dt, dev),
                           Tensor::from(rows, {N * K}, dev), Tensor::from(enabled, {N * K}, dev))
              .values();
      EXPECT_EQ(got, want) << dev.str() << " " << dtype_name(dt);
    }
  }
}

TEST(SenseSelection, WordCentredSelectionComparesResiduals) {
  SenseTable t = table_with_centers({{10, 0, 0, 0}, {10, 5, 0, 0}, {10, 0, 0.1, 0}, {10, 0, -0.1, 0}});
  Tensor ctx = Tensor::of({10, 0.5, 0, 0,  10, 0, 0.2, 0}, {2, 4}, DType::F64);
  EXPECT_EQ(select_senses(t, ctx, {0, 0}, eye4()), (std::vector<int32_t>{2, 2}));  // raw: residuals drowned
  SenseOptions o;
  o.selection_mean = SenseOptions::SelectionMean::Word;
  o.sense_learning_rate = 0.5;
  Tensor mean = selection_mean(t, o, Tensor(), {0, 0});
  EXPECT_EQ(mean.values(), (std::vector<double>{10, 0, 0, 0, 10, 0, 0, 0}));
  EXPECT_EQ(select_senses(t, ctx, {0, 0}, eye4(), mean), (std::vector<int32_t>{1, 2}));
  SenseTable before = t;
  before.centers = t.centers.clone();
  update_sense_centers(t, o, ctx, {2, 2}, {0, 0});  // sense 0 moves halfway to the mean of both contexts
  const std::vector<double> c = t.centers.values();  // row 0: (10, 0, 0, 0) + 0.5 * ((10, 0.25, 0.1, 0) - it)
  EXPECT_NEAR(c[0], 10, 1e-12);
  EXPECT_NEAR(c[1], 0.125, 1e-12);
  EXPECT_NEAR(c[2], 0.05, 1e-12);
  EXPECT_NEAR(c[2 * 4 + 1], 0.125, 1e-12);  // the selected sense 2 moved too: (10, 0, 0.1, 0) -> halfway
  SenseOptions none;
  EXPECT_FALSE(selection_mean(t, none, Tensor(), {0, 0}).defined());

  // word_offset: sense 0 keeps the word's offset from the batch mean, and selection adds the
  // current batch mean back, so a shift of the whole batch (drift) shifts the mean with it.
  SenseTable u = before;
  u.centers = before.centers.clone();
  o.selection_mean = SenseOptions::SelectionMean::WordOffset;
  o.sense_learning_rate = 1.0;  // the offset is this batch's
  Tensor batch = Tensor::of({10, 0.5, 0, 0,  10, 0, 0.2, 0,  4, 0, 0, 0,  4, 1, 0, 0}, {4, 4}, DType::F64);
  update_sense_centers(u, o, batch, {2, 2, 6, 6}, {0, 0, 1, 1});
  const std::vector<double> off = u.centers.values();  // word 0's mean (10, .25, .1, 0) minus the batch's (7, .375, .05, 0)
  EXPECT_NEAR(off[0], 3, 1e-12);
  EXPECT_NEAR(off[1], -0.125, 1e-12);
  EXPECT_NEAR(off[2], 0.05, 1e-12);
  Tensor shifted = ops::add_scalar(batch, 5.0);  // the whole representation moved by 5
  Tensor m = selection_mean(u, o, Tensor(), {0}, ops::mean(shifted, 0, true));
  const std::vector<double> want = {15, 5.25, 5.1, 5};  // word 0's mean, moved with the batch
  for (int k = 0; k < 4; ++k) EXPECT_NEAR(m.values()[k], want[k], 1e-12);
  EXPECT_THROW(selection_mean(u, o, Tensor(), {0}), Error);  // it needs the batch mean

  // The released update decays every cluster center, but not the word means in sense 0.
  SenseTable r = before;
  r.centers = before.centers.clone();
  o.selection_mean = SenseOptions::SelectionMean::Word;
  o.center_update = SenseOptions::CenterUpdate::Released;
  o.sense_learning_rate = 0.5;
  update_sense_centers(r, o, batch.rows(0, 2), {2, 2}, {0, 0});
  const std::vector<double> was = before.centers.values(), now = r.centers.values();
  for (int k = 0; k < 4; ++k) {
    EXPECT_NEAR(now[4 * 4 + k], was[4 * 4 + k], 1e-12);        // word 1's sense 0: its mean, untouched
    EXPECT_NEAR(now[5 * 4 + k], 0.5 * was[5 * 4 + k], 1e-12);  // word 1's sense 1: decayed
  }
}

TEST(SenseSelection, WarmupUsesSenseZeroOnly) {
  SenseTable t(5, 6, 8, 3);
  for (int w = 0; w < 5; ++w)
    for (int s = 0; s < 6; ++s) EXPECT_EQ(t.is_enabled(t.row(w, s)), s == 0);
  std::vector<int32_t> sel = select_senses(t, Tensor::full({3, 8}, 0.5), {4, 0, 2}, PcaProjection(8, 4, 10, 1).matrix());
  EXPECT_EQ(sel, (std::vector<int32_t>{24, 0, 12}));
  t.end_warmup(true);
  for (int s = 0; s < 6; ++s) EXPECT_EQ(t.is_enabled(t.row(1, s)), s != 0);
  std::vector<double> w = t.W.values(), c = t.centers.values();
  for (int k = 0; k < 8; ++k) {  // copy: sense 3 of word 2 starts from sense 0 of word 2
    EXPECT_EQ(w[t.row(2, 3) * 8 + k], w[t.row(2, 0) * 8 + k]);
    EXPECT_EQ(c[t.row(2, 3) * 8 + k], c[t.row(2, 0) * 8 + k]);
  }
}

TEST(SenseSelection, ZeroCentersAfterWarmupSplitBySign) {
  SenseTable t(2, 4, 4, 5, Device::cpu(), DType::F64);
  t.end_warmup(false);
  t.zero_new_centers();
  Tensor ctx = Tensor::of({1, 2, 0, 0, -1, -2, 0, 0}, {2, 4}, DType::F64);
  // every candidate ties at cosine 0: the lowest enabled sense (1) wins
  EXPECT_EQ(select_senses(t, ctx, {0, 0}, eye4()), (std::vector<int32_t>{1, 1}));
  update_centers(t, Tensor::of({1, 2, 0, 0}, {1, 4}, DType::F64), {1}, 0.1, SenseOptions::CenterUpdate::Released);
  // sense 1 now points along (1, 2): the opposite context has a negative cosine, so sense 2 wins
  EXPECT_EQ(select_senses(t, ctx, {0, 0}, eye4()), (std::vector<int32_t>{1, 2}));
}

TEST(SenseSelection, EmptyCentersAreSeededByTheFirstContexts) {
  SenseTable t(2, 4, 4, 5, Device::cpu(), DType::F64);
  t.end_warmup(true);
  t.zero_new_centers();
  // Word 0: three senses, all empty. The first three occurrences take senses 1, 2, 3 in turn; the
  // fourth (near the second) joins sense 2; word 1's occurrence seeds its own sense 1 (row 5).
  Tensor ctx = Tensor::of({1, 0, 0, 0,  0, 1, 0, 0,  0, 0, 1, 0,  0.1, 1, 0, 0,  0, 0, 0, 1}, {5, 4}, DType::F64);
  std::vector<int32_t> sel = select_senses(t, ctx, {0, 0, 0, 0, 1}, eye4(), Tensor(), true);
  EXPECT_EQ(sel, (std::vector<int32_t>{1, 2, 3, 2, 5}));
  // Without seeding every sense ties at cosine 0 and the lowest wins.
  EXPECT_EQ(select_senses(t, ctx, {0, 0, 0, 0, 1}, eye4()), (std::vector<int32_t>{1, 1, 1, 1, 5}));
  // After the update the seeded centers hold their contexts: no more seeding for word 0, and the
  // point near the third context goes to sense 3.
  update_centers(t, ctx, sel, 0.01, SenseOptions::CenterUpdate::Paper);
  Tensor next = Tensor::of({0.2, 0, 0.9, 0,  0.9, 0.1, 0, 0}, {2, 4}, DType::F64);
  EXPECT_EQ(select_senses(t, next, {0, 1}, eye4(), Tensor(), true), (std::vector<int32_t>{3, 6}));
}

// warmup_init = "data": a center still at zero takes the mean of its first contexts exactly (a
// scaled copy would be wrong once selection subtracts a mean); seeded centers keep the EMA.
TEST(SenseCenters, ZeroCentersAreSeededExactly) {
  SenseTable t(2, 2, 2, 1, Device::cpu(), DType::F64);
  t.centers = Tensor::of({1, 1, 0, 0, 4, 4, 8, 8}, {4, 2}, DType::F64);
  Tensor ctx = Tensor::of({10, 0, 20, 0, 5, 5}, {3, 2}, DType::F64);
  update_centers(t, ctx, {1, 1, 3}, 0.1, SenseOptions::CenterUpdate::Paper, true);
  EXPECT_EQ(t.centers.values(), (std::vector<double>{1, 1, 15, 0, 4, 4, 0.9 * 8 + 0.5, 0.9 * 8 + 0.5}));
  t.centers = Tensor::of({1, 1, 0, 0, 4, 4, 8, 8}, {4, 2}, DType::F64);
  update_centers(t, ctx, {1, 1, 3}, 0.1, SenseOptions::CenterUpdate::Paper, false);
  EXPECT_NEAR(t.centers.values()[2], 1.5, 1e-12);  // without: a * mean
  t.centers = Tensor::of({1, 1, 0, 0, 4, 4, 8, 8}, {4, 2}, DType::F64);
  update_centers(t, ctx, {1, 1, 3}, 0.1, SenseOptions::CenterUpdate::Released, true);
  const std::vector<double> c = t.centers.values();  // released decay and add, then the seeded row is its mean
  EXPECT_NEAR(c[0], 0.9, 1e-12);
  EXPECT_NEAR(c[2], 15, 1e-12);
  EXPECT_NEAR(c[3], 0, 1e-12);
  EXPECT_NEAR(c[6], 0.9 * 8 + 0.1 * 5 / (1 + 1e-5), 1e-12);
}

TEST(SenseCenters, PaperAndReleasedUpdates) {
  for (auto mode : {SenseOptions::CenterUpdate::Paper, SenseOptions::CenterUpdate::Released}) {
    SenseTable t(2, 2, 2, 1, Device::cpu(), DType::F64);
    t.centers = Tensor::of({1, 1, 2, 2, 4, 4, 8, 8}, {4, 2}, DType::F64);
    Tensor ctx = Tensor::of({10, 0, 20, 0, 5, 5}, {3, 2}, DType::F64);
    update_centers(t, ctx, {1, 1, 3}, 0.1, mode);  // row 1 gets mean (15, 0), row 3 gets (5, 5)
    std::vector<double> c = t.centers.values();
    if (mode == SenseOptions::CenterUpdate::Paper) {
      EXPECT_EQ(c, (std::vector<double>{1, 1, 0.9 * 2 + 1.5, 0.9 * 2, 4, 4, 0.9 * 8 + 0.5, 0.9 * 8 + 0.5}));
    } else {  // every row decays; hit rows add a * sum / (count + 1e-5)
      EXPECT_NEAR(c[0], 0.9, 1e-12);
      EXPECT_NEAR(c[2], 0.9 * 2 + 0.1 * 30 / (2 + 1e-5), 1e-12);
      EXPECT_NEAR(c[4], 3.6, 1e-12);
      EXPECT_NEAR(c[6], 0.9 * 8 + 0.1 * 5 / (1 + 1e-5), 1e-12);
    }
  }
}

// center_update = "per_token": a row chosen k times moves 1 - (1 - a)^k of the way to the mean of
// its contexts, as k sequential per-token steps toward one point would; a row chosen once moves
// as in "paper", an unchosen row stays.
TEST(SenseCenters, PerTokenUpdateCompoundsTheRate) {
  SenseTable t(2, 2, 2, 1, Device::cpu(), DType::F64);
  t.centers = Tensor::of({1, 1, 2, 2, 4, 4, 8, 8}, {4, 2}, DType::F64);
  Tensor ctx = Tensor::of({10, 0, 20, 0, 5, 5, 15, 0}, {4, 2}, DType::F64);
  update_centers(t, ctx, {1, 1, 3, 1}, 0.1, SenseOptions::CenterUpdate::PerToken);  // row 1: mean (15, 0), k = 3
  const double w = 1 - 0.9 * 0.9 * 0.9;
  const std::vector<double> c = t.centers.values();
  EXPECT_NEAR(c[2], 2 + w * (15 - 2), 1e-12);
  EXPECT_NEAR(c[3], 2 + w * (0 - 2), 1e-12);
  EXPECT_NEAR(c[6], 8 + 0.1 * (5 - 8), 1e-12);
  EXPECT_EQ(c[0], 1.0);
  EXPECT_EQ(c[4], 4.0);
  // k sequential steps toward one point land where the compounded rate does.
  double seq = 2;
  for (int k = 0; k < 3; ++k) seq += 0.1 * (15 - seq);
  EXPECT_NEAR(c[2], seq, 1e-12);
}

// A training step hands update_centers the selection on the device. The center update coalesces
// it there (CUDA pads the distinct rows with id -1 and a zero count, which must move nothing) and
// reads nothing back; every device lands where the CPU does.
TEST(SenseCenters, TheUpdateReadsNothingOnTheGpuAndMatchesTheCpu) {
  using U = SenseOptions::CenterUpdate;
  std::mt19937_64 rng(4);
  std::normal_distribution<double> g(0, 1);
  std::vector<double> cv(40 * 3), xv(30 * 3);
  for (double& v : cv) v = g(rng);
  for (double& v : xv) v = 5 * g(rng);
  std::vector<int32_t> rows;
  for (int n = 0; n < 30; ++n) rows.push_back(static_cast<int32_t>((n * 7) % 11) * 3 + n % 2);  // repeats
  for (U mode : {U::Paper, U::Released, U::PerToken}) {
    std::vector<std::vector<double>> out;
    for (Device d : testing::cpu_and_gpu("the center update")) {
      SenseTable t(20, 2, 3, 1, d, DType::F32);
      t.centers = Tensor::of(cv, {40, 3}, DType::F32, d);
      const Tensor ctx = Tensor::of(xv, {30, 3}, DType::F32, d), sel = Tensor::from(rows, {30}, d);
      {  // CUDA's padded slots (count 0) must make no NaN on the way (the check reads each op's output)
        SenseTable checked(20, 2, 3, 1, d, DType::F32);
        checked.centers = Tensor::of(cv, {40, 3}, DType::F32, d);
        set_check_numerics(true);
        update_centers(checked, ctx, sel, 0.1, mode);
        set_check_numerics(false);
      }
      const DeviceCounters before = device_counters();
      update_centers(t, ctx, sel, 0.1, mode);
      EXPECT_EQ((device_counters() - before).host_reads, 0) << d.str();
      out.push_back(t.centers.values());
    }
    // The same update from a host list of rows, and against the rule written out in double.
    SenseTable h(20, 2, 3, 1, Device::cpu(), DType::F64);
    h.centers = Tensor::of(cv, {40, 3}, DType::F64);
    update_centers(h, Tensor::of(xv, {30, 3}, DType::F64), rows, 0.1, mode);
    std::vector<double> want = cv;
    for (int r = 0; r < 40; ++r) {
      std::vector<double> sum(3, 0.0);
      double k = 0;
      for (int n = 0; n < 30; ++n)
        if (rows[n] == r) ++k, sum[0] += xv[n * 3], sum[1] += xv[n * 3 + 1], sum[2] += xv[n * 3 + 2];
      for (int c = 0; c < 3; ++c) {
        double& v = want[r * 3 + c];
        if (mode == U::Released) {
          v = 0.9 * v + (k > 0 ? 0.1 * sum[c] / (k + 1e-5) : 0.0);
        } else if (k > 0) {
          const double w = mode == U::Paper ? 0.1 : 1 - std::pow(0.9, k);
          v += w * (sum[c] / k - v);
        }
      }
    }
    testing::expect_outputs_near({h.centers.values()}, {want}, 1e-12);
    for (const auto& o : out) testing::expect_outputs_near({o}, {want}, 1e-5);  // f32
  }
}

TEST(SenseProjection, RecoversKnownPrincipalAxes) {
  // Variance 9 along (1,1,0,0)/sqrt2, 4 along e2, 0.01 noise elsewhere, plus an offset (the fit
  // centers the data).
  std::mt19937_64 rng(4);
  std::normal_distribution<double> n(0, 1);
  std::vector<double> v;
  for (int i = 0; i < 4000; ++i) {
    double a = 3 * n(rng), b = 2 * n(rng);
    v.insert(v.end(), {5 + a / std::sqrt(2) + 0.1 * n(rng), -3 + a / std::sqrt(2) + 0.1 * n(rng), b + 0.1 * n(rng),
                       0.1 * n(rng)});
  }
  PcaProjection p(4, 2, 3000, 9);
  EXPECT_FALSE(p.fitted());
  p.push(Tensor::of(v, {4000, 4}));
  EXPECT_EQ(p.queued(), 3000u);  // only the last Q vectors are kept
  p.refit();
  std::vector<double> m = p.matrix().values();  // [4, 2]
  EXPECT_NEAR(std::abs(m[0 * 2 + 0]), 1 / std::sqrt(2), 0.02);
  EXPECT_NEAR(std::abs(m[1 * 2 + 0]), 1 / std::sqrt(2), 0.02);
  EXPECT_GT(m[0] * m[2], 0);  // same sign on both axes of the first component
  EXPECT_NEAR(std::abs(m[2 * 2 + 1]), 1.0, 0.02);
  EXPECT_NEAR(p.explained_variance()[0], 9, 0.6);
  EXPECT_NEAR(p.explained_variance()[1], 4, 0.3);
  double dot = 0, n0 = 0, n1 = 0;
  for (int i = 0; i < 4; ++i) dot += m[i * 2] * m[i * 2 + 1], n0 += m[i * 2] * m[i * 2], n1 += m[i * 2 + 1] * m[i * 2 + 1];
  EXPECT_NEAR(dot, 0, 1e-6);
  EXPECT_NEAR(n0, 1, 1e-6);
  EXPECT_NEAR(n1, 1, 1e-6);
}

// The fit's components are eigenvectors of the queue's covariance, summed here the plain way: at an
// odd width, over more samples than one block of the BLAS sum and a partial block.
TEST(SenseProjection, ComponentsAreEigenvectorsOfThePlainCovariance) {
  const int d = 37, k = 5, n = 2500;
  std::mt19937_64 rng(4);
  std::normal_distribution<double> g(0, 1);
  std::vector<double> v(static_cast<size_t>(n) * d);
  for (int r = 0; r < n; ++r)
    for (int i = 0; i < d; ++i) v[static_cast<size_t>(r) * d + i] = 0.3 * i + g(rng) * (1 + (i % 7)) + (i % 3 == 0 ? 2 * v[static_cast<size_t>(r) * d] : 0);
  PcaProjection p(d, k, n, 1);
  p.push(Tensor::of(v, {n, d}));
  p.refit();
  // The plain covariance of the f32 samples the queue holds.
  std::vector<double> x(v.size()), mean(d, 0.0), cov(static_cast<size_t>(d) * d, 0.0);
  for (size_t e = 0; e < v.size(); ++e) x[e] = static_cast<float>(v[e]);
  for (int r = 0; r < n; ++r)
    for (int i = 0; i < d; ++i) mean[i] += x[static_cast<size_t>(r) * d + i] / n;
  for (int r = 0; r < n; ++r)
    for (int i = 0; i < d; ++i)
      for (int j = 0; j < d; ++j)
        cov[static_cast<size_t>(i) * d + j] +=
            (x[static_cast<size_t>(r) * d + i] - mean[i]) * (x[static_cast<size_t>(r) * d + j] - mean[j]) / (n - 1);
  const std::vector<double> P = p.matrix().values(), var = p.explained_variance();
  for (int c = 0; c < k; ++c) {
    // Sigma p = lambda p, to the f32 rounding of the stored component.
    double residual = 0, norm = 0;
    for (int i = 0; i < d; ++i) {
      double sp = 0;
      for (int j = 0; j < d; ++j) sp += cov[static_cast<size_t>(i) * d + j] * P[static_cast<size_t>(j) * k + c];
      residual = std::max(residual, std::abs(sp - var[c] * P[static_cast<size_t>(i) * k + c]));
      norm += P[static_cast<size_t>(i) * k + c] * P[static_cast<size_t>(i) * k + c];
    }
    EXPECT_LT(residual, 1e-5 * var[0]) << c;
    EXPECT_NEAR(norm, 1, 1e-6) << c;
    if (c > 0) {
      EXPECT_GT(var[c - 1], var[c]);
    }
  }
}

// A context vector with a NaN or an inf is refused with a message: LAPACK's dsyevr can loop
// forever on such a covariance (without the check this test hangs or fails on the message).
TEST(SenseProjection, RefusesNonFiniteContexts) {
  for (double bad : {std::nan(""), std::numeric_limits<double>::infinity()}) {
    std::mt19937_64 rng(3);
    std::normal_distribution<double> n(0, 1);
    std::vector<double> v(200 * 8);
    for (double& e : v) e = n(rng);
    v[37 * 8 + 5] = bad;
    PcaProjection p(8, 3, 1000, 2);
    p.push(Tensor::of(v, {200, 8}));
    std::string message;
    try {
      p.refit();
    } catch (const std::exception& e) {
      message = e.what();
    }
    EXPECT_NE(message.find("not finite"), std::string::npos) << bad << ": " << message;
    EXPECT_FALSE(p.fitted());
  }
}

// The schedule of after_step with a queue that follows the model: pushes every 2 steps, refits
// every 10, and a refit sees the last 20 steps only. The contexts spread along axis 0 (variance
// 100) up to step 20 and along axis 1 (variance 1) after it, so only a projection fitted on recent
// vectors has axis 1 first.
namespace {
SenseStep spread_along(int axis, double scale, std::mt19937_64& rng) {
  std::normal_distribution<double> n(0, 1);
  std::vector<double> v(64 * 4, 0.0);
  for (int r = 0; r < 64; ++r) {
    v[r * 4 + axis] = scale * n(rng);
    for (int i = 0; i < 4; ++i) v[r * 4 + i] += 0.01 * n(rng);
  }
  return {Tensor::of(v, {64, 4}), Tensor::from(std::vector<int32_t>(64, 0), {64}), std::vector<int32_t>(64, 0), {}, Tensor()};
}
double first_axis_weight(const PcaProjection& p, int axis) { return std::abs(p.matrix().values()[axis * 2]); }
}  // namespace

TEST(SenseProjection, QueueSpansTheRecentSteps) {
  for (int64_t span : {int64_t{0}, int64_t{20}}) {
    SenseOptions o;
    o.n_context = 2, o.cluster_proj_dim = 2, o.pca_every = 10, o.pca_push_every = 2, o.pca_queue_steps = span;
    o.pca_sample = 100000, o.contextual_warmup = 1000, o.prune_first = 1000;
    SenseHead h(1, o, 4, 3, Device::cpu());
    std::mt19937_64 rng(8);
    for (int64_t step = 1; step <= 41; ++step) after_step(h, o, step, spread_along(step <= 20 ? 0 : 1, step <= 20 ? 10 : 1, rng));
    if (span == 0) {  // every push since step 1: 21 pushes (odd steps), axis 0 still dominates
      EXPECT_EQ(h.proj.queued(), 21u * 64);
      EXPECT_EQ(h.proj.oldest_step(), 1);
      EXPECT_NEAR(first_axis_weight(h.proj, 0), 1.0, 1e-3);
    } else {  // steps 22..41: pushes at 23, 25, ..., 41
      EXPECT_EQ(h.proj.queued(), 10u * 64);
      EXPECT_EQ(h.proj.oldest_step(), 23);
      EXPECT_NEAR(first_axis_weight(h.proj, 1), 1.0, 1e-3);
    }
  }
}

TEST(SenseProjection, CheckpointKeepsQueueStepsAndFittedMean) {
  PcaProjection p(4, 2, 1000, 9);
  std::mt19937_64 rng(2);
  p.push(spread_along(0, 3, rng).ctx, 1);
  p.refit();
  p.push(Tensor::full({64, 4}, 7.0), 5);  // pushed after the fit: not part of the fitted mean
  PcaProjection q(4, 2, 1000, 1);
  q.restore(p.queue_tensor(), p.queue_steps_tensor(), p.mean(), p.matrix(), true);
  EXPECT_EQ(q.queued(), p.queued());
  EXPECT_EQ(q.oldest_step(), 1);
  EXPECT_EQ(q.mean().values(), p.mean().values());
  EXPECT_EQ(q.matrix().values(), p.matrix().values());
  q.drop_before(5), p.drop_before(5);
  EXPECT_EQ(q.queued(), 64u);
  EXPECT_EQ(q.queue_tensor().values(), p.queue_tensor().values());
  // A checkpoint of an earlier version (no steps, no mean): rows count as step 0, the mean is the queue's.
  PcaProjection old(4, 2, 1000, 1);
  old.restore(p.queue_tensor(), Tensor(), Tensor(), p.matrix(), true);
  EXPECT_EQ(old.oldest_step(), 0);
  EXPECT_NEAR(old.mean().values()[0], 7.0, 1e-6);
}

// Pushes stay on their device until the queue is read; then they come in one read, in order, and a
// push that newer ones have already pushed out of the queue is never read.
TEST(SenseProjection, PushesReachTheQueueInOneRead) {
  PcaProjection p(2, 1, 50, 9);
  std::vector<double> all;
  for (int step = 1; step <= 4; ++step) {
    std::vector<double> v(30 * 2);
    for (size_t i = 0; i < v.size(); ++i) v[i] = step * 1000 + static_cast<double>(i);
    all.insert(all.end(), v.begin(), v.end());
    p.push(Tensor::of(v, {30, 2}), step);
  }
  const DeviceCounters before = device_counters();
  EXPECT_EQ(p.queued(), 50u);  // the newest 50 of 120 rows
  EXPECT_EQ((device_counters() - before).host_reads, 1);
  EXPECT_EQ(p.queue_tensor().values(), std::vector<double>(all.end() - 100, all.end()));
  EXPECT_EQ(p.oldest_step(), 3);
  const std::vector<double> steps = p.queue_steps_tensor().values();
  EXPECT_EQ(std::count(steps.begin(), steps.end(), 3.0), 20);
  EXPECT_EQ(std::count(steps.begin(), steps.end(), 4.0), 30);
}

// Selections recorded on the device reach the windows in one read, in the order they were recorded,
// mixed with host records: the windows equal those of recording every step on the host.
TEST(SensePruning, DeviceSelectionsReachTheWindowsInOneRead) {
  SenseUsage eager(5), lazy(5);
  std::mt19937_64 rng(6);
  for (int step = 0; step < 6; ++step) {
    std::vector<int32_t> rows;
    for (int n = 0; n < 7; ++n) rows.push_back(static_cast<int32_t>(rng() % 12));
    eager.record(rows, 3);
    if (step == 3)
      lazy.record(rows, 3);  // a host record first takes what is pending
    else
      lazy.record(Tensor::from(rows, {7}), 3);
  }
  const DeviceCounters before = device_counters();
  const Tensor windows = lazy.to_tensor(4);
  EXPECT_EQ((device_counters() - before).host_reads, 1);
  EXPECT_EQ(windows.values(), eager.to_tensor(4).values());
  for (int w = 0; w < 4; ++w) EXPECT_EQ(lazy.window_of(w), eager.window_of(w));
}

// Each word's window holds its last `window` selections, oldest first, through wrapping, a
// checkpoint's tensor and its restore: the same as a queue per word kept the plain way.
TEST(SensePruning, WindowsKeepEachWordsLastSelectionsInOrder) {
  const int C = 3, V = 40, window = 7;
  SenseUsage u(window), restored(window);
  std::vector<std::deque<int32_t>> plain(V);
  std::mt19937_64 rng(11);
  for (int step = 0; step < 60; ++step) {
    std::vector<int32_t> rows;
    for (int n = 0; n < 9; ++n) rows.push_back(static_cast<int32_t>((rng() % 4 == 0 ? rng() % V : rng() % 3) * C + rng() % C));
    for (int32_t r : rows) {
      plain[static_cast<size_t>(r / C)].push_back(r);
      if (static_cast<int>(plain[static_cast<size_t>(r / C)].size()) > window) plain[static_cast<size_t>(r / C)].pop_front();
    }
    u.record(rows, C);
    if (step == 30) restored.restore(u.to_tensor(V));
    if (step > 30) restored.record(rows, C);
  }
  const std::vector<double> t = u.to_tensor(V).values();
  for (int w = 0; w < V; ++w) {
    const std::vector<int32_t> want(plain[static_cast<size_t>(w)].begin(), plain[static_cast<size_t>(w)].end());
    EXPECT_EQ(u.window_of(w), want) << w;
    EXPECT_EQ(restored.window_of(w), want) << w;
    for (int i = 0; i < window; ++i)
      EXPECT_EQ(t[static_cast<size_t>(w * window + i)], i < static_cast<int>(want.size()) ? want[static_cast<size_t>(i)] : -1);
  }
  EXPECT_EQ(plain[0].size(), static_cast<size_t>(window));  // the frequent words wrapped
  EXPECT_TRUE(u.window_of(V + 5).empty());
}

TEST(SensePruning, HalvesRareSensesThenDisablesAndResets) {
  SenseTable t(3, 4, 2, 1);
  t.end_warmup(false);  // senses 1..3 enabled
  SenseUsage u(100);
  // word 0: sense 1 used 99 times, sense 2 once (1% -> rare), sense 3 never
  std::vector<int32_t> rows(99, t.row(0, 1));
  rows.push_back(t.row(0, 2));
  // word 1: only 50 selections -> never pruned
  for (int i = 0; i < 50; ++i) rows.push_back(t.row(1, 3));
  u.record(rows, 4);
  EXPECT_EQ(u.prune(t, 0.1), 0);
  EXPECT_EQ(t.enabled[t.row(0, 2)], 0.5f);
  EXPECT_EQ(t.enabled[t.row(0, 3)], 0.5f);
  EXPECT_EQ(t.enabled[t.row(0, 1)], 1.f);
  EXPECT_EQ(t.enabled[t.row(1, 1)], 1.f);  // rare word untouched
  u.prune(t, 0.1);
  u.prune(t, 0.1);
  EXPECT_EQ(t.enabled[t.row(0, 3)], 0.125f);
  EXPECT_EQ(u.prune(t, 0.1), 2);  // 4th low check: 0.0625 < 0.1 removes senses 2 and 3
  EXPECT_FALSE(t.is_enabled(t.row(0, 3)));
  EXPECT_TRUE(t.is_enabled(t.row(0, 1)));
  // A share above 1% resets a (still enabled) score to 1.
  t.enabled[t.row(0, 1)] = 0.25f;
  u.prune(t, 0.1);
  EXPECT_EQ(t.enabled[t.row(0, 1)], 1.f);
}

TEST(SensePruning, NeverRevivesTheWarmupSense) {
  SenseTable t(1, 3, 2, 1);
  SenseUsage u(100);
  u.record(std::vector<int32_t>(60, t.row(0, 0)), 3);  // warm-up selections still in the window
  t.end_warmup(false);
  u.record(std::vector<int32_t>(40, t.row(0, 1)), 3);
  u.prune(t, 0.1);
  EXPECT_FALSE(t.is_enabled(t.row(0, 0)));
  EXPECT_EQ(t.enabled[t.row(0, 1)], 1.f);
  EXPECT_EQ(t.enabled[t.row(0, 2)], 0.5f);
}

TEST(SensePruning, NeverRemovesEverySense) {
  SenseTable t(2, 3, 2, 1);
  SenseUsage u(100);
  u.record(std::vector<int32_t>(100, t.row(1, 0)), 3);  // a window filled during warm-up
  t.end_warmup(false);                                   // sense 0 now disabled
  for (int check = 0; check < 6; ++check) u.prune(t, 0.1);
  int alive = 0;
  for (int s = 0; s < 3; ++s) alive += t.is_enabled(t.row(1, s));
  EXPECT_GE(alive, 1);
}

TEST(SenseSoftmax, UniformNegativesComeFromEnabledRows) {
  SenseTable t(50, 4, 2, 1);
  t.end_warmup(false);
  t.enabled[t.row(7, 2)] = 0;
  std::mt19937_64 rng(3);
  std::vector<int32_t> neg = sample_enabled_rows(t, 120, rng);
  std::set<int32_t> seen(neg.begin(), neg.end());
  EXPECT_EQ(seen.size(), 120u);  // without replacement
  for (int32_t r : neg) EXPECT_TRUE(t.is_enabled(r)) << r;
  EXPECT_EQ(sample_enabled_rows(t, 1000, rng).size(), 149u);  // at most every enabled row
}

// The head's enabled list, from which a step draws its uniform negatives on the device, follows the
// table through after_step: sense 0 only during the warm-up, the released senses after it, and
// without the senses pruning removes; the draw equals sample_enabled_rows with the same rng.
TEST(SenseSoftmax, TheDeviceListOfEnabledRowsFollowsWarmupAndPruning) {
  SenseOptions o;
  o.n_context = 3, o.cluster_proj_dim = 2, o.pca_every = 1000, o.pca_sample = 1000, o.contextual_warmup = 2;
  o.prune_first = 3, o.prune_every = 1, o.pca_push_every = 1000;
  SenseHead h(4, o, 4, 3, Device::cpu());
  auto list = [&] {
    std::vector<int32_t> r;
    for (double v : h.enabled_rows_on_device().values()) r.push_back(static_cast<int32_t>(v));
    return r;
  };
  EXPECT_EQ(list(), h.table.enabled_rows());  // warm-up: sense 0 of every word
  EXPECT_EQ(list().size(), 4u);
  // Steps whose selections all fall on word 0's sense 1, so its sense 2 is rare.
  auto step = [&](int64_t n) {
    std::vector<int32_t> rows(200, h.table.row(0, n <= 2 ? 0 : 1));
    std::vector<double> ctx(200 * 4, 0.5);
    return after_step(h, o, n, SenseStep{Tensor::of(ctx, {200, 4}), Tensor::from(rows, {200}),
                                         std::vector<int32_t>(200, 0), {}, Tensor()});
  };
  step(1);
  EXPECT_TRUE(step(2).warmup_ended);
  EXPECT_EQ(list(), h.table.enabled_rows());  // the released senses 1 and 2 of every word
  EXPECT_EQ(list().size(), 8u);
  int pruned = 0;
  for (int64_t n = 3; n <= 8 && pruned == 0; ++n) pruned = std::max(pruned, step(n).pruned);
  ASSERT_GT(pruned, 0);
  EXPECT_FALSE(h.table.is_enabled(h.table.row(0, 2)));
  EXPECT_EQ(list(), h.table.enabled_rows());  // rebuilt without the pruned sense
  std::mt19937_64 a(5), b(5);
  const std::vector<int32_t> host = sample_enabled_rows(h.table, 5, a);
  std::vector<int32_t> device;
  for (double v : ops::draw_distinct(h.enabled_rows_on_device(), 5, b()).values()) device.push_back(static_cast<int32_t>(v));
  EXPECT_EQ(device, host);
}

// With one contextual sense per word (n_context = 2 after a copying warm-up end), the log-uniform
// sense softmax is ELMo's sampled softmax: the same words drawn from the same rng, the same log-Q
// shifts and accidental hits, so loss and gradients agree. Any gap between SaELMo and ELMo then
// comes from the senses, not from this softmax.
TEST(SenseSoftmax, OneSensePerWordEqualsElmosSampledSoftmax) {
  const int V = 500, P = 6, N = 40, n = 64;
  SenseTable t(V, 2, P, 1, Device::cpu(), DType::F64);
  std::mt19937_64 init(9);
  std::vector<double> wv(static_cast<size_t>(t.rows()) * P), bv(static_cast<size_t>(t.rows()));
  for (auto& e : wv) e = std::uniform_real_distribution<double>(-1, 1)(init);
  for (auto& e : bv) e = std::uniform_real_distribution<double>(-1, 1)(init);
  t.W.copy_from(Tensor::of(wv, {t.rows(), P}, DType::F64));
  t.b.copy_from(Tensor::of(bv, {t.rows(), 1}, DType::F64));
  t.end_warmup(true);  // sense 1 of every word takes sense 0's row; sense 0 is disabled
  // ELMo's softmax weights: each word's one row.
  std::vector<double> ew, eb;
  for (int w = 0; w < V; ++w) {
    for (int p = 0; p < P; ++p) ew.push_back(wv[static_cast<size_t>(t.row(w, 0)) * P + p]);
    eb.push_back(bv[static_cast<size_t>(t.row(w, 0))]);
  }
  Tensor We = Tensor::of(ew, {V, P}, DType::F64).set_requires_grad(), be = Tensor::of(eb, {V, 1}, DType::F64).set_requires_grad();
  std::vector<int32_t> words, rows;
  std::vector<double> xv(static_cast<size_t>(N) * P);
  for (int r = 0; r < N; ++r) words.push_back(static_cast<int32_t>(init() % 60)), rows.push_back(t.row(words.back(), 1));
  for (auto& e : xv) e = std::uniform_real_distribution<double>(-1, 1)(init);
  Tensor x = Tensor::of(xv, {N, P}, DType::F64).set_requires_grad();

  std::mt19937_64 rng_sense(21), rng_elmo(21);
  Tensor ls = sense_sampled_loss(x, t, rows, sample_log_uniform_senses(t, n, words, rng_sense));
  backward(ops::sum(ls));
  const std::vector<double> gx_sense = x.grad().values();
  x.zero_grad();
  Tensor le = sampled_softmax_loss(x, We, be, words, LogUniformSampler(V), n, rng_elmo);
  backward(ops::sum(le));
  testing::expect_outputs_near({ls.values(), gx_sense}, {le.values(), x.grad().values()}, 1e-12);
  EXPECT_EQ(rng_sense(), rng_elmo());  // the same draws consumed
}

// Words drawn before the step are taken only where the step's own draw would give the same: the
// same generator state and the same count of words. Either way the negatives, their shifts and
// the generator after are those of drawing in the step.
TEST(SenseSoftmax, WordsDrawnAheadAreTakenOnlyWhereTheyAreTheStepsOwn) {
  SenseTable t(400, 4, 2, 1, Device::cpu(), DType::F64);
  const std::vector<int32_t> targets = {0, 5, 9};
  const auto budget = SenseOptions::NegativeBudget::Words;
  auto ahead_of = [&](int words, uint64_t seed) {
    std::mt19937_64 rng(seed);
    WordsDrawnAhead a = draw_words_ahead(t.vocab(), words, rng);
    shift_labels(a.draw, targets, tabulated_log_uniform(t.vocab()));
    a.draw.sampled_shift[0] += 1;  // a mark: seen in the result only where the ahead draw is taken
    return a;
  };
  auto expect_same = [](const SenseNegatives& a, const SenseNegatives& b, bool first_shift_differs) {
    EXPECT_EQ(a.rows, b.rows);
    EXPECT_EQ(a.true_shift, b.true_shift);
    EXPECT_EQ(a.tries, b.tries);
    ASSERT_EQ(a.shift.size(), b.shift.size());
    EXPECT_EQ(a.shift[0] != b.shift[0], first_shift_differs);
    EXPECT_TRUE(std::equal(a.shift.begin() + 1, a.shift.end(), b.shift.begin() + 1));
  };
  // During the warm-up (one sense a word) 60 words stay under the cap of 150 rows.
  const int words = log_uniform_words(t.vocab(), t.enabled_count(), 60, budget, 150);
  ASSERT_EQ(words, 60);
  std::mt19937_64 step_rng(7), fresh_rng(7);
  WordsDrawnAhead ahead = ahead_of(words, 7);
  const SenseNegatives fresh = sample_log_uniform_senses(t, 60, targets, fresh_rng, budget, 150);
  expect_same(sample_log_uniform_senses(t, 60, targets, step_rng, budget, 150, &ahead), fresh, true);
  EXPECT_EQ(step_rng, fresh_rng);
  // Another generator state: drawn anew.
  std::mt19937_64 other_rng(8), other_fresh(8);
  ahead = ahead_of(words, 7);
  expect_same(sample_log_uniform_senses(t, 60, targets, other_rng, budget, 150, &ahead),
              sample_log_uniform_senses(t, 60, targets, other_fresh, budget, 150), false);
  EXPECT_EQ(other_rng, other_fresh);
  // The warm-up ends between the draw and the step: 3 senses a word bring the words under the cap
  // to 50, and the step draws anew.
  t.end_warmup(false);
  ASSERT_EQ(log_uniform_words(t.vocab(), t.enabled_count(), 60, budget, 150), 50);
  std::mt19937_64 late_rng(7), late_fresh(7);
  ahead = ahead_of(words, 7);
  const SenseNegatives late = sample_log_uniform_senses(t, 60, targets, late_rng, budget, 150, &ahead);
  expect_same(late, sample_log_uniform_senses(t, 60, targets, late_fresh, budget, 150), false);
  EXPECT_EQ(late.words, 50);
  EXPECT_EQ(late_rng, late_fresh);
}

TEST(SenseSoftmax, LogUniformNegativesTakeWholeWordsWithLogQ) {
  SenseTable t(400, 4, 2, 1, Device::cpu(), DType::F64);
  t.end_warmup(false);           // 3 enabled senses per word
  t.enabled[t.row(0, 3)] = 0;    // word 0 (the most frequent) keeps 2
  std::mt19937_64 rng(5);
  SenseNegatives neg = sample_log_uniform_senses(t, 90, {0, 5}, rng);
  // 90 rows / 3 senses per word = 30 distinct words, each with every enabled sense.
  std::map<int, std::vector<int>> by_word;
  for (int32_t r : neg.rows) {
    by_word[r / 4].push_back(r % 4);
    EXPECT_TRUE(t.is_enabled(r));
  }
  EXPECT_EQ(by_word.size(), 30u);
  for (auto& [w, senses] : by_word) EXPECT_EQ(senses.size(), w == 0 ? 2u : 3u) << w;
  // Frequent words are drawn more often: low ids dominate.
  int low = 0;
  for (auto& [w, s] : by_word) low += w < 40;
  EXPECT_GT(low, 10);
  // The log-Q shift is shared by a word's senses, and is the smallest for the most frequent word.
  ASSERT_EQ(neg.shift.size(), neg.rows.size());
  ASSERT_EQ(neg.true_shift.size(), 2u);
  EXPECT_LT(neg.true_shift[0], neg.true_shift[1]);
  for (size_t i = 0; i + 1 < neg.rows.size(); ++i)
    if (neg.rows[i] / 4 == neg.rows[i + 1] / 4) {
      EXPECT_EQ(neg.shift[i], neg.shift[i + 1]);
    }
  // Each shift is TF's -log(expected count) written out, bit for bit (the shifts come from a table).
  const LogUniformSampler formula(400);
  ASSERT_GT(neg.tries, 30);
  for (size_t i = 0; i < neg.rows.size(); ++i)
    EXPECT_EQ(neg.shift[i], -std::log(formula.expected_count(neg.rows[i] / 4, neg.words, neg.tries))) << i;
  EXPECT_EQ(neg.true_shift[1], -std::log(formula.expected_count(5, neg.words, neg.tries)));
  // The loss with shifts equals the unshifted one computed on shifted logits: check one row by hand.
  Tensor x = Tensor::of({0.3, -0.7}, {1, 2}, DType::F64);
  const int32_t target = t.row(5, 1);
  std::vector<double> W = t.W.values(), b = t.b.values();
  auto logit = [&](int32_t r) { return x.values()[0] * W[r * 2] + x.values()[1] * W[r * 2 + 1] + b[r]; };
  double z = std::exp(logit(target) + neg.true_shift[1]), zt = z;
  for (size_t i = 0; i < neg.rows.size(); ++i)
    if (neg.rows[i] != target) z += std::exp(logit(neg.rows[i]) + neg.shift[i]);
  SenseNegatives one = neg;
  one.true_shift = {neg.true_shift[1]};
  EXPECT_NEAR(sense_sampled_loss(x, t, {target}, one).item(), -std::log(zt / z), 1e-12);
}

// The fused candidate softmax (chunks on the CPU, a streaming log-sum-exp on CUDA) equals the
// unfused ops on the loss and on every gradient, with accidental hits and log-Q shifts, for more
// rows than one CPU chunk.
TEST(SenseSoftmax, FusedEqualsUnfusedOnCpuAndGpu) {
  for (Device dev : testing::cpu_and_gpu("FusedEqualsUnfused")) {
    const DType dt = dev.is_cuda() ? DType::F32 : DType::F64;
    // 2,000 candidates: the CPU works in chunks of 2^21 / 2000 = 1024 rows, so 1,100 rows take two.
    SenseTable t(1500, 3, 6, 7, dev, dt);
    t.end_warmup(false);
    t.W.set_requires_grad().set_sparse_grad();
    t.b.set_requires_grad().set_sparse_grad();
    std::mt19937_64 rng(11);
    std::vector<int32_t> sel;
    for (int i = 0; i < 1100; ++i) sel.push_back(t.row(static_cast<int>(rng() % 40), 1 + static_cast<int>(rng() % 2)));
    SenseNegatives neg = sample_log_uniform_senses(t, 2000, std::vector<int32_t>(1100, 0), rng);
    ASSERT_GT(neg.rows.size(), 1900u);
    for (size_t i = 0; i < neg.true_shift.size(); ++i) neg.true_shift[i] = -0.1 * static_cast<double>(i % 7);
    // An accidental hit for row 3, and a repeated one when the sampler drew that row too.
    neg.rows.push_back(sel[3]), neg.shift.push_back(0.3);
    std::vector<double> v(1100 * 6);
    for (auto& e : v) e = std::uniform_real_distribution<double>(-1, 1)(rng);
    Tensor x = Tensor::of(v, {1100, 6}, dt, dev).set_requires_grad();
    auto grads = [&](bool fused) {
      x.zero_grad(), t.W.zero_grad(), t.b.zero_grad();
      Tensor l = fused ? candidate_softmax_loss(x, t.W, t.b, sel, neg.rows, &neg.true_shift, &neg.shift)
                       : candidate_softmax_loss_unfused(x, t.W, t.b, sel, neg.rows, &neg.true_shift, &neg.shift);
      backward(ops::sum(l));
      return std::vector<std::vector<double>>{l.values(), x.grad().values(), t.W.sparse_grad().to_dense(t.rows(), 6).values(),
                                              t.b.sparse_grad().to_dense(t.rows(), 1).values()};
    };
    auto a = grads(true), b = grads(false);
    testing::expect_outputs_near(a, b, dt == DType::F64 ? 1e-12 : 2e-5);
  }
}

// Selection inside the fused softmax (ops::select_candidate_softmax) against selecting first and
// then the fused softmax on those rows: the same rows, loss and gradients. Some senses are
// disabled, the contexts are word-centred, and the negatives hold selected rows (accidental
// hits) and other senses of the targets. f64 on the CPU (1e-12); with a GPU, f32 CUDA against
// the CPU's selection-first path (2e-5).
TEST(SenseSoftmax, SelectionInsideTheFusedOpEqualsSelectingFirstOnCpuAndGpu) {
  for (Device dev : testing::cpu_and_gpu("SelectionInsideTheFusedOp")) {
    const DType dt = dev.is_cuda() ? DType::F32 : DType::F64;
    auto run = [&](Device d, bool fused) {
      const int64_t N = 120, P = 6;
      SenseTable t(300, 4, P, 7, d, dt);
      t.end_warmup(false);
      for (int w = 0; w < 40; w += 3) t.enabled[static_cast<size_t>(t.row(w, 2))] = 0;  // pruned senses
      std::mt19937_64 rng(23);
      std::normal_distribution<double> g;
      std::vector<int32_t> words;
      for (int64_t n = 0; n < N; ++n) words.push_back(static_cast<int32_t>(rng() % 40));
      std::vector<double> xv(N * P), cv(N * P), pv(P * 3);
      for (auto* v : {&xv, &cv, &pv})
        for (double& e : *v) e = g(rng);
      Tensor x = Tensor::of(xv, {N, P}, dt, d).set_requires_grad();
      const Tensor ctx = Tensor::of(cv, {N, P}, dt, d), proj = Tensor::of(pv, {P, 3}, DType::F32);
      const Tensor mean = ops::gather_rows(t.centers, Tensor::from(std::vector<int32_t>(N, 5), {N}, d));
      std::vector<int32_t> neg = sample_enabled_rows(t, 200, rng);
      neg.push_back(t.row(words[0], 1)), neg.push_back(t.row(words[1], 3));
      std::vector<int32_t> sel;
      Tensor loss;
      if (fused) {
        SelectedLoss r = select_and_sampled_loss(x, t, ctx, words, proj, mean,
                                                 Tensor::from(neg, {static_cast<int64_t>(neg.size())}, d));
        loss = r.per_row, sel = host_rows(r.selected);
      } else {
        sel = select_senses(t, ctx, words, proj, mean);
        loss = sense_sampled_loss(x, t, sel, neg);
      }
      backward(ops::sum(loss));
      return std::pair{std::vector<double>(sel.begin(), sel.end()),
                       std::vector<std::vector<double>>{loss.values(), x.grad().values(),
                                                        t.W.sparse_grad().to_dense(t.rows(), P).values(),
                                                        t.b.sparse_grad().to_dense(t.rows(), 1).values()}};
    };
    auto [sel_a, a] = run(dev, true);
    auto [sel_b, b] = run(Device::cpu(), false);
    EXPECT_EQ(sel_a, sel_b);
    std::set<double> senses;
    for (double r : sel_a) senses.insert(static_cast<int>(r) % 4);
    EXPECT_GE(senses.size(), 2u);  // the selection is not trivially one sense
    testing::expect_outputs_near(a, b, dt == DType::F64 ? 1e-12 : 2e-5);
  }
}

TEST(SenseSoftmax, MasksGiveNoNaN) {
  SenseTable t(4, 3, 2, 1, Device::cpu(), DType::F64);
  t.end_warmup(false);
  t.W.set_requires_grad();
  Tensor x = Tensor::of({0.5, -1, 2, 0.25}, {2, 2}, DType::F64).set_requires_grad();
  struct Numerics {
    Numerics() { set_check_numerics(true); }
    ~Numerics() { set_check_numerics(false); }
  } on;
  // every negative is the row's own target (a self-translation-like case): all masked
  Tensor l1 = sense_sampled_loss(x, t, {4, 4}, {4});
  EXPECT_NEAR(l1.values()[0], 0.0, 1e-12);  // only the target remains: probability 1
  backward(ops::sum(l1));
  // exact softmax with disabled rows
  Tensor l2 = sense_full_loss(x, t, {5, 10});
  for (double v : l2.values()) EXPECT_TRUE(std::isfinite(v));
  backward(ops::sum(l2));
  for (double v : x.grad().values()) EXPECT_TRUE(std::isfinite(v));
}

// The exact sense softmax without its [N, rows] logits equals the masked softmax over those logits
// (what it replaced), loss and gradients, in f64.
TEST(SenseSoftmax, FullLossEqualsTheMaskedSoftmaxOverAllRows) {
  for (bool sparse : {true, false}) {
    SenseTable t(9, 3, 4, 2, Device::cpu(), DType::F64);
    t.end_warmup(false);
    t.enabled[t.row(4, 2)] = 0;
    t.enabled[t.row(7, 1)] = 0;
    if (!sparse) t.W = t.W.detach().set_requires_grad(), t.b = t.b.detach().set_requires_grad();  // SaBERT's dense table
    std::vector<double> xv(6 * 4);
    for (size_t i = 0; i < xv.size(); ++i) xv[i] = std::sin(0.7 * i);
    const std::vector<int32_t> sel = {1, 5, 7, 13, 2, 5};
    std::vector<std::vector<double>> out[2];
    for (int fused = 0; fused < 2; ++fused) {
      Tensor x = Tensor::of(xv, {6, 4}, DType::F64).set_requires_grad();
      t.W.zero_grad();
      t.b.zero_grad();
      Tensor loss;
      if (fused) {
        loss = sense_full_loss(x, t, sel);
      } else {
        const int64_t R = t.rows();
        std::vector<uint8_t> disabled(static_cast<size_t>(R));
        for (int64_t r = 0; r < R; ++r) disabled[r] = !t.is_enabled(static_cast<int>(r));
        Tensor logits = ops::add(ops::matmul(x, t.W, false, true), ops::reshape(t.b, {1, R}));
        logits = ops::masked_fill(logits, Tensor::from(disabled, {1, R}), -std::numeric_limits<double>::infinity());
        loss = ops::cross_entropy(logits, Tensor::from(sel, {6}));
      }
      backward(ops::sum(loss));
      auto dense = [&](const Tensor& p, int64_t w) {
        return p.grad().defined() ? p.grad().values() : p.sparse_grad().to_dense(t.rows(), w).values();
      };
      out[fused] = {loss.values(), x.grad().values(), dense(t.W, 4), dense(t.b, 1)};
    }
    testing::expect_outputs_near(out[1], out[0], 1e-12);
    for (int64_t r : {t.row(4, 2), t.row(7, 1)})  // a disabled row gets no gradient
      for (int c = 0; c < 4; ++c) EXPECT_EQ(out[1][2][r * 4 + c], 0.0) << "row " << r;
  }
}

TEST(SenseSoftmax, LossGradientMatchesFiniteDifferences) {
  SenseTable t(6, 3, 4, 2, Device::cpu(), DType::F64);
  t.end_warmup(false);
  t.enabled[t.row(4, 2)] = 0;  // a disabled row: masked in the exact softmax
  std::vector<double> xv(5 * 4);
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = std::sin(1.3 * i);
  Tensor x = Tensor::of(xv, {5, 4}, DType::F64).set_requires_grad();
  std::vector<int32_t> sel = {1, 5, 7, 13, 2}, neg = {2, 4, 7, 8, 16, 11};  // hits on rows 2 and 7
  for (int full = 0; full < 2; ++full) {
    auto loss = [&] { return ops::sum(full ? sense_full_loss(x, t, sel) : sense_sampled_loss(x, t, sel, neg)); };
    x.zero_grad();
    t.W.zero_grad();
    t.b.zero_grad();
    backward(loss());
    std::vector<std::pair<Tensor, std::vector<double>>> checks = {
        {x, x.grad().values()},
        {t.W, t.W.sparse_grad().to_dense(t.rows(), 4).values()},
        {t.b, t.b.sparse_grad().to_dense(t.rows(), 1).values()}};
    for (auto& [p, analytic] : checks) {
      double* d = p.data<double>();
      for (int64_t e = 0; e < p.numel(); e += std::max<int64_t>(1, p.numel() / 20)) {
        NoGrad ng;
        double keep = d[e];
        d[e] = keep + 1e-6;
        double up = loss().item();
        d[e] = keep - 1e-6;
        double down = loss().item();
        d[e] = keep;
        EXPECT_NEAR(analytic[e], (up - down) / 2e-6, 1e-6 + 1e-5 * std::abs(analytic[e]))
            << (full ? "full" : "sampled") << " " << describe(p) << " element " << e;
      }
    }
  }
}

}  // namespace
}  // namespace sa

namespace sa {
namespace {

// Held-out perplexity's word probability: -log sum over the word's enabled senses of p(w, s),
// normalized over every enabled row, equals a brute-force softmax, whatever the chunk of rows;
// with one sense per word it is the ordinary word softmax.
TEST(SenseWordNll, SumsTheWordsEnabledSensesInChunks) {
  SenseTable t(7, 3, 4, 2, Device::cpu(), DType::F64);
  t.end_warmup(false);
  t.enabled[t.row(2, 1)] = 0;  // a pruned sense
  std::vector<double> bv(static_cast<size_t>(t.rows()));
  for (size_t i = 0; i < bv.size(); ++i) bv[i] = std::sin(1.3 * static_cast<double>(i));
  t.b.copy_from(Tensor::of(bv, {t.rows(), 1}, DType::F64));
  const Tensor x = Tensor::of({0.3, -0.2, 0.5, 0.1, -0.4, 0.2, 0.1, 0.3, 0.9, -0.7, 0.0, 0.2}, {3, 4}, DType::F64);
  const std::vector<int32_t> words = {2, 5, 0};
  const std::vector<double> W = t.W.values(), xv = x.values();
  for (int64_t chunk : {0, 1, 4, 100}) {
    const std::vector<double> got = sense_word_nll(x, t, words, chunk).values();
    for (int n = 0; n < 3; ++n) {
      double z = 0, pw = 0;
      for (int r = 0; r < t.rows(); ++r) {
        if (!t.is_enabled(r)) continue;
        double l = bv[static_cast<size_t>(r)];
        for (int k = 0; k < 4; ++k) l += xv[static_cast<size_t>(n * 4 + k)] * W[static_cast<size_t>(r * 4 + k)];
        z += std::exp(l);
        if (r / 3 == words[static_cast<size_t>(n)]) pw += std::exp(l);
      }
      EXPECT_NEAR(got[static_cast<size_t>(n)], -std::log(pw / z), 1e-12) << "chunk " << chunk << " row " << n;
    }
  }
}

}  // namespace
}  // namespace sa

namespace sa {
namespace {

// A sharded table stores exactly the rows of the unsharded one in its word range, and keeps the
// global row ids and enabled scores; the end of the warm-up copies within the shard as whole.
TEST(ShardedSenseTable, StoresTheUnshardedRowsOfItsWords) {
  const SenseTable whole(10, 3, 4, 5, Device::cpu(), DType::F64);
  for (int r = 0; r < 3; ++r) {
    SCOPED_TRACE(r);
    SenseTable part(10, 3, 4, 5, Device::cpu(), DType::F64, TableShard{r, 3});
    const int first = 10 * r / 3, words = 10 * (r + 1) / 3 - first;
    EXPECT_EQ(part.first_word(), first);
    EXPECT_EQ(part.stored_rows(), words * 3);
    EXPECT_EQ(part.rows(), 30);
    EXPECT_EQ(part.enabled.size(), 30u);
    EXPECT_FALSE(part.stores_all());
    EXPECT_EQ(part.W.values(), whole.W.rows(first * 3, (first + words) * 3).values());
    EXPECT_EQ(part.centers.values(), whole.centers.rows(first * 3, (first + words) * 3).values());
    SenseTable copy = whole;
    copy.W = whole.W.clone(), copy.b = whole.b.clone(), copy.centers = whole.centers.clone();
    copy.end_warmup(true);
    part.end_warmup(true);
    EXPECT_EQ(part.W.values(), copy.W.rows(first * 3, (first + words) * 3).values());
    EXPECT_EQ(part.enabled, copy.enabled);
  }
}

// On one process a working table is the whole table's rows of its words, in increasing word
// order, with the ids mapped both ways; its gradient goes back to the stored rows.
TEST(ShardedSenseTable, WorkingTableGathersTheWordsRowsAndMapsIds) {
  SenseTable whole(10, 3, 4, 5, Device::cpu(), DType::F64);
  whole.end_warmup(false);
  whole.enabled[whole.row(7, 2)] = 0;
  WorkingTable work(whole, {7, 2, 7, 9});
  EXPECT_EQ(work.table.vocab(), 3);
  EXPECT_EQ(work.words({2, 7, 9, 7}), (std::vector<int32_t>{0, 1, 2, 1}));
  EXPECT_EQ(work.find_word(3), -1);
  EXPECT_EQ(work.rows({whole.row(9, 1), whole.row(2, 0)}), (std::vector<int32_t>{7, 0}));
  EXPECT_EQ(work.global_rows({7, 0}), (std::vector<int32_t>{whole.row(9, 1), whole.row(2, 0)}));
  EXPECT_FALSE(work.table.is_enabled(work.table.row(1, 2)));
  const std::vector<double> w = whole.W.values(), g = work.table.W.values();
  for (int i = 0; i < 3; ++i)
    for (int s = 0; s < 3; ++s)
      for (int k = 0; k < 4; ++k)
        EXPECT_EQ(g[(i * 3 + s) * 4 + k], w[(std::vector<int>{2, 7, 9}[i] * 3 + s) * 4 + k]);
  // A loss on two rows: the stored gradient names the global rows (one process stores them all).
  Tensor loss = ops::sum(ops::gather_rows(work.table.W, Tensor::from(std::vector<int32_t>{7, 1}, {2})));
  backward(loss);
  auto [ids, rows] = work.stored_gradient(work.table.W);
  ASSERT_TRUE(ids.defined());
  EXPECT_EQ(ids.values(), (std::vector<double>{static_cast<double>(whole.row(2, 1)), static_cast<double>(whole.row(9, 1))}));
  EXPECT_EQ(rows.values(), std::vector<double>(8, 1.0));
}

}  // namespace
}  // namespace sa
