// The tape: reuse and accumulation, no-grad scopes, row-sparse gradients, NaN detection.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include <limits>
#include <random>

#include "engine/engine.h"
#include "tests/test_util.h"

namespace sa {
namespace {

Tensor param(std::vector<double> v, Shape s) { return Tensor::of(v, s, DType::F64).set_requires_grad(); }

TEST(Autograd, ValueUsedTwiceAccumulates) {
  Tensor x = param({1.5, -2.0, 0.5}, {3});
  // y = sum(x*x + 3x) -> dy/dx = 2x + 3
  Tensor y = ops::sum(ops::add(ops::mul(x, x), ops::scale(x, 3.0)));
  backward(y);
  std::vector<double> g = x.grad().values();
  EXPECT_DOUBLE_EQ(g[0], 6.0);
  EXPECT_DOUBLE_EQ(g[1], -1.0);
  EXPECT_DOUBLE_EQ(g[2], 4.0);
  EXPECT_EQ(tape_size(), 0u);
}

TEST(Autograd, GradientsAccumulateAcrossBackwardCallsUntilZeroed) {
  Tensor x = param({2.0}, {1});
  backward(ops::sum(ops::scale(x, 5.0)));
  backward(ops::sum(ops::scale(x, 5.0)));
  EXPECT_DOUBLE_EQ(x.grad().item(), 10.0);
  x.zero_grad();
  EXPECT_FALSE(x.grad().defined());
  backward(ops::sum(ops::square(x)));
  EXPECT_DOUBLE_EQ(x.grad().item(), 4.0);
}

TEST(Autograd, DiamondGraphSumsBothPaths) {
  Tensor x = param({0.3, -0.7}, {2});
  Tensor a = ops::tanh(x);
  Tensor b = ops::mul(a, a);          // a used twice
  Tensor c = ops::add(a, ops::exp(x));
  Tensor y = ops::sum(ops::mul(b, c));
  backward(y);
  std::vector<double> xv = x.values(), g = x.grad().values();
  for (int i = 0; i < 2; ++i) {
    double t = std::tanh(xv[i]), dt = 1 - t * t, e = std::exp(xv[i]);
    // y_i = t^2 (t + e) -> dy/dx = (3 t^2 dt + 2 t dt e + t^2 e)
    double expect = 3 * t * t * dt + 2 * t * dt * e + t * t * e;
    EXPECT_NEAR(g[i], expect, 1e-12);
  }
}

TEST(Autograd, NoGradRecordsNothing) {
  Tensor x = param({1.0, 2.0}, {2});
  {
    NoGrad ng;
    Tensor y = ops::mul(x, x);
    EXPECT_FALSE(y.requires_grad());
    EXPECT_EQ(tape_size(), 0u);
  }
  Tensor y = ops::mul(x, x);
  EXPECT_TRUE(y.requires_grad());
  EXPECT_EQ(tape_size(), 1u);
  clear_tape();
}

TEST(Autograd, ConstantsGetNoGradient) {
  Tensor x = param({1.0, 2.0}, {2});
  Tensor c = Tensor::of({3.0, 4.0}, {2}, DType::F64);
  backward(ops::sum(ops::mul(x, c)));
  EXPECT_FALSE(c.grad().defined());
  EXPECT_EQ(x.grad().values(), (std::vector<double>{3.0, 4.0}));
}

TEST(Autograd, SparseTableGetsOnlyTouchedRows) {
  Tensor table = Tensor::of({1, 2, 3, 4, 5, 6, 7, 8}, {4, 2}, DType::F64).set_requires_grad().set_sparse_grad();
  Tensor idx = Tensor::from(std::vector<int32_t>{3, 1, 3}, {3});
  Tensor w = Tensor::of({1, 10, 100, 1000, 2, 20}, {3, 2}, DType::F64);
  backward(ops::sum(ops::mul(ops::gather_rows(table, idx), w)));
  EXPECT_FALSE(table.grad().defined()) << "a sparse table must not get a dense gradient";
  auto [ids, rows] = table.sparse_grad().coalesce();
  EXPECT_EQ(ids.values(), (std::vector<double>{1, 3}));
  EXPECT_EQ(rows.values(), (std::vector<double>{100, 1000, 3, 30}));  // row 3 used twice: summed
  Tensor dense = table.sparse_grad().to_dense(4, 2);
  EXPECT_EQ(dense.values(), (std::vector<double>{0, 0, 100, 1000, 0, 0, 3, 30}));
}

// A negative id is a padding slot (a GPU's padded coalescing): every backend drops it, so an
// exact coalesce of padded entries gives the distinct ids alone.
TEST(Autograd, CoalescingDropsPaddingIdsOnCpuAndGpu) {
  for (Device d : testing::cpu_and_gpu("coalescing with padding ids")) {
    SparseGrad g;
    g.indices.push_back(Tensor::from(std::vector<int32_t>{-1, 2, 0, -1, 2}, {5}).to(d));
    g.rows.push_back(Tensor::of({9, 9, 1, 2, 3, 4, 9, 9, 10, 20}, {5, 2}, DType::F64, d));
    auto [ids, rows] = g.coalesce();
    EXPECT_EQ(ids.values(), (std::vector<double>{0, 2})) << d.str();
    EXPECT_EQ(rows.values(), (std::vector<double>{3, 4, 11, 22})) << d.str();
    // ids far apart (the CPU sorts them instead of mapping their range): the same contract
    SparseGrad far;
    far.indices.push_back(Tensor::from(std::vector<int32_t>{70000, -1, 5, 70000}, {4}).to(d));
    far.rows.push_back(Tensor::of({1, 2, 9, 9, 3, 4, 10, 20}, {4, 2}, DType::F64, d));
    auto [fids, frows] = far.coalesce();
    EXPECT_EQ(fids.values(), (std::vector<double>{5, 70000})) << d.str();
    EXPECT_EQ(frows.values(), (std::vector<double>{3, 4, 11, 22})) << d.str();
  }
}

TEST(Autograd, SparseAndDenseGradientsAgree) {
  std::vector<double> v(5 * 3);
  for (size_t i = 0; i < v.size(); ++i) v[i] = 0.1 * static_cast<double>(i) - 0.4;
  Tensor idx = Tensor::from(std::vector<int32_t>{4, 0, 4, 2, 2, 2}, {2, 3});
  Tensor dense_t = Tensor::of(v, {5, 3}, DType::F64).set_requires_grad();
  Tensor sparse_t = Tensor::of(v, {5, 3}, DType::F64).set_requires_grad().set_sparse_grad();
  backward(ops::sum(ops::square(ops::gather_rows(dense_t, idx))));
  backward(ops::sum(ops::square(ops::gather_rows(sparse_t, idx))));
  EXPECT_EQ(dense_t.grad().values(), sparse_t.sparse_grad().to_dense(5, 3).values());
}

TEST(Autograd, NumericsCheckNamesTheOp) {
  set_check_numerics(true);
  Tensor x = param({1.0, -1.0}, {2});
  try {
    ops::log(x);
    ADD_FAILURE() << "log(-1) should have been reported";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'log'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("forward"), std::string::npos) << e.what();
  }
  clear_tape();
  // Finite forward, infinite gradient: sqrt at 0.
  Tensor z = param({0.0, 4.0}, {2});
  Tensor y = ops::sum(ops::sqrt(z));
  try {
    backward(y);
    ADD_FAILURE() << "d sqrt(0) should have been reported";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'sqrt'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("gradient"), std::string::npos) << e.what();
  }
  set_check_numerics(false);
  clear_tape();
}

TEST(Autograd, BackwardOfConstantFails) {
  Tensor c = Tensor::of({1.0}, {1}, DType::F64);
  EXPECT_THROW(backward(c), Error);
}

// The CPU's candidate softmax keeps the forward's log probabilities for the backward when they are
// small; the backward from them equals the one that recomputes them, bit for bit.
TEST(CandidateSoftmax, KeptLogProbabilitiesGiveTheRecomputedGradients) {
  for (DType dt : {DType::F64, DType::F32}) {
    const int64_t N = 7, P = 5, S = 9;
    std::mt19937_64 rng(5);
    std::normal_distribution<double> nd(0, 0.5);
    auto rnd = [&](Shape sh) {
      std::vector<double> v(static_cast<size_t>(numel(sh)));
      for (double& e : v) e = nd(rng);
      return Tensor::from(v, sh).to(dt);
    };
    const Tensor x = rnd({N, P}), wt = rnd({N, P}), bt = rnd({N}), Wc = rnd({S, P}), bc = rnd({S}), gloss = rnd({N});
    const Tensor own = Tensor::from(std::vector<int32_t>{3, 1, 4, 1, 5, 9, 2}, {N});
    const Tensor cand = Tensor::from(std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6, 7, 8}, {S});  // rows 1, 3, 5 hit
    const Tensor w = Tensor::full({N}, 1.0, dt);
    Backend& be = backend(Device::cpu());
    auto like = [](const Tensor& t) { return Tensor::empty(t.shape(), t.dtype()); };
    Tensor loss_a = Tensor::empty({N}, dt), lse_a = like(loss_a), loss_b = like(loss_a), lse_b = like(loss_a);
    Tensor logp = Tensor::empty({N, S}, dt);
    be.candidate_softmax(x, wt, bt, Wc, bc, own, cand, w, loss_a, lse_a, &logp);
    be.candidate_softmax(x, wt, bt, Wc, bc, own, cand, w, loss_b, lse_b, nullptr);
    EXPECT_EQ(loss_a.values(), loss_b.values());
    EXPECT_EQ(lse_a.values(), lse_b.values());
    EXPECT_EQ(logp.values()[1 * S + 1], -std::numeric_limits<double>::infinity());  // an accidental hit
    std::vector<std::vector<double>> grads[2];
    for (int kept = 0; kept < 2; ++kept) {
      Tensor gx = like(x), gwt = like(wt), gbt = like(bt), gWc = like(Wc), gbc = like(bc);
      be.candidate_softmax_backward(x, wt, bt, Wc, bc, own, cand, w, lse_a, gloss, gx, gwt, gbt, gWc, gbc,
                                    kept ? &logp : nullptr);
      for (const Tensor& g : {gx, gwt, gbt, gWc, gbc}) grads[kept].push_back(g.values());
    }
    EXPECT_EQ(grads[0], grads[1]) << dtype_name(dt);
  }
}

// broadcast_as_rows (CUDA's one-division kernel for the common broadcasts) reads, for every
// output element, the elements the general plan reads; it is found for the cases it claims and
// refused for a broadcast on both sides of one operand.
TEST(Broadcast, AsRowsReadsWhatTheGeneralPlanReads) {
  auto general = [](const BroadcastPlan& p, const int64_t* st, int64_t i) {
    int64_t off = 0;
    for (int k = p.rank - 1; k >= 0; --k) off += (i % p.shape[k]) * st[k], i /= p.shape[k];
    return off;
  };
  struct Case {
    Shape out, a, b;
    bool rows;  // expected to be found
  };
  const std::vector<Case> cases = {
      {{6, 5}, {6, 5}, {5}, true},           // a bias row
      {{6, 5}, {5}, {6, 5}, true},           // the bias on the left
      {{3, 4, 5}, {3, 4, 5}, {4, 5}, true},  // position embeddings
      {{3, 4, 5}, {3, 4, 5}, {1, 4, 5}, true},
      {{6, 5}, {6, 5}, {6, 1}, true},        // a column
      {{3, 4, 5}, {3, 4, 5}, {3, 4, 1}, true},
      {{3, 4, 5}, {3, 4, 5}, {1}, true},     // a scalar
      {{3, 1, 5}, {3, 1, 5}, {5}, true},     // size-1 dims
      {{3, 4, 5}, {3, 4, 5}, {3, 1, 5}, false},  // a middle axis: strides 5, 0, 1
      {{3, 4, 5}, {3, 1, 5}, {4, 1}, false},     // both operands broadcast, crossing
      {{2, 3, 4, 5}, {2, 3, 4, 5}, {4, 5}, true},
      {{2, 3, 4, 5}, {2, 3, 4, 5}, {2, 1, 1, 5}, false},
  };
  for (const Case& c : cases) {
    const BroadcastPlan p = make_broadcast_plan(c.out, c.a, c.b);
    BroadcastRows r;
    const bool found = broadcast_as_rows(p, &r);
    EXPECT_EQ(found, c.rows) << to_string(c.out) << " from " << to_string(c.a) << " and " << to_string(c.b);
    if (!found) continue;
    for (int64_t i = 0; i < numel(c.out); ++i) {
      const int64_t o = i / r.inner, j = i % r.inner;
      ASSERT_EQ(o * r.so[0] + j * r.si[0], general(p, p.stride_a, i)) << to_string(c.out) << " a, element " << i;
      ASSERT_EQ(o * r.so[1] + j * r.si[1], general(p, p.stride_b, i)) << to_string(c.out) << " b, element " << i;
    }
  }
}

// The element offsets of a copy plan in row-major order of its index, as (source, destination).
std::vector<std::pair<int64_t, int64_t>> copy_offsets(const CopyPlan& p) {
  int64_t total = 1;
  for (int k = 0; k < p.rank; ++k) total *= p.shape[k];
  std::vector<std::pair<int64_t, int64_t>> out;
  for (int64_t i = 0; i < total; ++i) {
    int64_t rem = i, s = p.src_offset, d = p.dst_offset;
    for (int k = p.rank - 1; k >= 0; --k) s += (rem % p.shape[k]) * p.src_stride[k], d += (rem % p.shape[k]) * p.dst_stride[k], rem /= p.shape[k];
    out.emplace_back(s, d);
  }
  return out;
}

// A permute of `shape` by `perm` (contiguous source and destination), as ops::permute plans it.
CopyPlan permute_plan(const Shape& shape, const std::vector<int>& perm) {
  CopyPlan p;
  p.rank = static_cast<int>(shape.size());
  Shape os(shape.size());
  for (size_t k = 0; k < perm.size(); ++k) os[k] = shape[perm[k]];
  const Shape xs = strides_of(shape), ys = strides_of(os);
  for (int k = 0; k < p.rank; ++k) p.shape[k] = os[k], p.src_stride[k] = xs[perm[k]], p.dst_stride[k] = ys[k];
  return p;
}

// collapse_copy_plan (both backends' copies) drops size-1 dims and merges dims contiguous on both
// sides: the same (source, destination) pairs in the same order, with fewer dims where it can.
TEST(CopyPlan, CollapsedPlansCopyTheSameElementsInOrder) {
  std::mt19937_64 rng(3);
  int merged = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const int rank = 1 + static_cast<int>(rng() % 5);
    Shape shape(rank);
    for (int64_t& d : shape) d = 1 + static_cast<int64_t>(rng() % 4);
    std::vector<int> perm(rank);
    for (int k = 0; k < rank; ++k) perm[k] = k;
    std::shuffle(perm.begin(), perm.end(), rng);
    CopyPlan p = permute_plan(shape, perm);
    if (trial % 3 == 0) {  // a block of a bigger tensor along an axis, as slice and concat copy
      const int axis = static_cast<int>(rng() % rank);
      Shape big = shape;
      big[axis] += 2;
      const Shape bs = strides_of(big), ss = strides_of(shape);
      for (int k = 0; k < rank; ++k) p.shape[k] = shape[k], p.src_stride[k] = bs[k], p.dst_stride[k] = ss[k];
      p.src_offset = bs[axis];
      p.dst_offset = 0;
    }
    const CopyPlan c = collapse_copy_plan(p);
    ASSERT_EQ(copy_offsets(c), copy_offsets(p)) << "trial " << trial;
    EXPECT_LE(c.rank, p.rank);
    merged += c.rank < p.rank;
  }
  EXPECT_GT(merged, 100);  // most random plans lose a dim
  // A copy of whole rows is one run; BERT's head permute keeps the dims it moves.
  CopyPlan rows;
  rows.rank = 2, rows.shape[0] = 5, rows.shape[1] = 8, rows.src_stride[0] = 8, rows.src_stride[1] = 1;
  rows.dst_stride[0] = 8, rows.dst_stride[1] = 1, rows.src_offset = 16;
  EXPECT_EQ(collapse_copy_plan(rows).rank, 1);
  EXPECT_EQ(collapse_copy_plan(permute_plan({4, 6, 3, 2, 8}, {2, 0, 3, 1, 4})).rank, 5);
  EXPECT_EQ(collapse_copy_plan(permute_plan({4, 6, 2, 8}, {0, 2, 1, 3})).rank, 4);
}

// The GPU's 16-byte path: taken only where every row splits into aligned 16-byte pieces, and the
// pieces, found the way its kernel finds them (copy_row_offsets on the plan in pieces), cover the
// plan's elements in order.
TEST(CopyPlan, SixteenBytePiecesOnlyWhereEveryRowIsAligned) {
  alignas(16) static float buf[64];
  const void* a = buf;
  const void* off = buf + 1;  // 4 bytes in: not 16-byte aligned
  const CopyPlan heads = collapse_copy_plan(permute_plan({2, 3, 3, 2, 8}, {2, 0, 3, 1, 4}));
  EXPECT_EQ(copy_vector_width(heads, 4, a, a), 4);
  EXPECT_EQ(copy_vector_width(heads, 2, a, a), 8);  // bf16
  EXPECT_EQ(copy_vector_width(heads, 4, off, a), 1);
  EXPECT_EQ(copy_vector_width(heads, 4, a, off), 1);
  EXPECT_EQ(copy_vector_width(collapse_copy_plan(permute_plan({2, 3, 3, 2, 6}, {2, 0, 3, 1, 4})), 4, a, a), 1);  // rows of 6
  EXPECT_EQ(copy_vector_width(collapse_copy_plan(permute_plan({4, 8}, {1, 0})), 4, a, a), 1);  // a transpose
  CopyPlan shifted = heads;
  shifted.src_offset = 2;
  EXPECT_EQ(copy_vector_width(shifted, 4, a, a), 1);
  for (const CopyPlan& p : {heads, collapse_copy_plan(permute_plan({3, 4, 16}, {1, 0, 2}))}) {
    const int w = copy_vector_width(p, 4, a, a);
    ASSERT_EQ(w, 4);
    CopyPlan q = p;  // as CudaBackend::copy_strided scales it
    const int r = q.rank - 1;
    q.shape[r] /= w, q.src_offset /= w, q.dst_offset /= w;
    for (int k = 0; k < r; ++k) q.src_stride[k] /= w, q.dst_stride[k] /= w;
    std::vector<std::pair<int64_t, int64_t>> got;
    int64_t total = 1;
    for (int k = 0; k < q.rank; ++k) total *= q.shape[k];
    for (int64_t c = 0; c < total; ++c) {
      const int64_t row = c / q.shape[r], j = c - row * q.shape[r];
      int64_t s, d;
      copy_row_offsets(q, row, &s, &d);
      for (int e = 0; e < w; ++e) got.emplace_back((s + j) * w + e, (d + j) * w + e);
    }
    EXPECT_EQ(got, copy_offsets(p));
  }
}

// CUDA's copies (the 16-byte row path and the general kernel) equal the CPU's for every element
// size: permutes and slices whose rows split into 16-byte pieces (f64, f32, bf16, u8: 2 to 16
// elements a piece), a concat into a block of a bigger tensor, and a view that starts off the
// 16-byte grid (the general kernel).
TEST(CopyPlan, CudaCopiesEqualTheCpusForEveryElementSizeAndAlignment) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no GPU present: CUDA's copies not compared";
  std::mt19937_64 rng(8);
  std::vector<double> v(4 * 8 * 3 * 16);
  for (double& e : v) e = static_cast<double>(rng() % 200) - 100;  // exact in bf16 and u8 (after the shift)
  for (DType dt : {DType::F64, DType::F32, DType::BF16, DType::U8}) {
    std::vector<double> w = v;
    if (dt == DType::U8)
      for (double& e : w) e += 100;
    // Through f32, which casts to and from each of them.
    const Tensor x = Tensor::of(w, {4, 8, 3, 16}, DType::F32).to(dt), xg = x.to(Device::cuda(0));
    auto same = [&](const Tensor& cpu, const Tensor& gpu, const char* what) {
      EXPECT_EQ(cpu.to(DType::F32).values(), gpu.to(Device::cpu()).to(DType::F32).values()) << what << ", " << describe(x);
    };
    same(ops::permute(x, {0, 2, 1, 3}), ops::permute(xg, {0, 2, 1, 3}), "permute");
    same(ops::permute(x, {2, 0, 1, 3}), ops::permute(xg, {2, 0, 1, 3}), "permute of three dims");
    same(ops::slice(x, 1, 2, 6), ops::slice(xg, 1, 2, 6), "slice");
    same(ops::concat({x, x}, 2), ops::concat({xg, xg}, 2), "concat");
    const Tensor flat = x.view({4 * 8 * 3 * 16}), flatg = xg.view({4 * 8 * 3 * 16});
    const Tensor off = flat.rows(1, 1 + 8 * 3 * 16).view({8, 3, 16}), offg = flatg.rows(1, 1 + 8 * 3 * 16).view({8, 3, 16});
    same(ops::permute(off, {1, 0, 2}), ops::permute(offg, {1, 0, 2}), "permute of an unaligned view");
  }
}

}  // namespace
}  // namespace sa

namespace sa {
namespace {

// Broadcast additions sum their gradient back over the broadcast axes: leading ones ([B, T, H] +
// [T, H], position embeddings; [N, C] + [C], a bias) through the CPU's column-block loop, any
// other (a middle axis, [B, 1, H]) row by row. f64 and terms added in element order: exactly the
// sums of explicit loops.
TEST(Broadcast, GradientsSumOverLeadingAndMiddleAxesExactly) {
  const int64_t B = 3, T = 5, H = 7;
  std::vector<double> xv(B * T * H), wv(B * T * H);
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = 0.01 * double(i), wv[i] = std::sin(double(i)) * 1e3 + 1e-3 * double(i);
  struct Case {
    Shape shape;
    std::function<int64_t(int64_t, int64_t, int64_t)> at;  // the broadcast operand's element for (b, t, h)
  };
  const std::vector<Case> cases = {{{T, H}, [&](int64_t, int64_t t, int64_t h) { return t * H + h; }},
                                   {{H}, [&](int64_t, int64_t, int64_t h) { return h; }},
                                   {{1, H}, [&](int64_t, int64_t, int64_t h) { return h; }},
                                   {{T, 1}, [&](int64_t, int64_t t, int64_t) { return t; }},
                                   {{B, 1, H}, [&](int64_t b, int64_t, int64_t h) { return b * H + h; }},
                                   {{B, T, 1}, [&](int64_t b, int64_t t, int64_t) { return b * T + t; }}};
  for (const Case& c : cases) {
    Tensor x = Tensor::of(xv, {B, T, H}, DType::F64);
    Tensor y = Tensor::zeros(c.shape, DType::F64).set_requires_grad();
    backward(ops::sum(ops::mul(ops::add(x, y), Tensor::of(wv, {B, T, H}, DType::F64))));
    std::vector<double> want(static_cast<size_t>(numel(c.shape)), 0.0);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t t = 0; t < T; ++t)
        for (int64_t h = 0; h < H; ++h) want[static_cast<size_t>(c.at(b, t, h))] += wv[static_cast<size_t>((b * T + t) * H + h)];
    EXPECT_EQ(y.grad().values(), want) << to_string(c.shape);
  }
  // Past the size at which the column blocks run on several threads: still the same sums.
  const int64_t R = 300, C = 600;
  std::vector<double> big(R * C);
  for (size_t i = 0; i < big.size(); ++i) big[i] = std::cos(double(i)) * 1e3 + 1e-4 * double(i);
  Tensor y = Tensor::zeros({C}, DType::F64).set_requires_grad();
  backward(ops::sum(ops::mul(ops::add(Tensor::zeros({R, C}, DType::F64), y), Tensor::of(big, {R, C}, DType::F64))));
  std::vector<double> want(C, 0.0);
  for (int64_t r = 0; r < R; ++r)
    for (int64_t c = 0; c < C; ++c) want[c] += big[r * C + c];
  EXPECT_EQ(y.grad().values(), want);
}

}  // namespace
}  // namespace sa

namespace sa {
namespace {

// A batch of small products (attention's heads) runs its items side by side on the CPU: each item
// equals the same product on its own, bit for bit, forward and gradients.
TEST(Bmm, SmallItemsSideBySideEqualEachItemAlone) {
  const int64_t batch = 24, m = 16, k = 8, n = 12;
  std::vector<double> av(batch * m * k), bv(batch * k * n);
  for (size_t i = 0; i < av.size(); ++i) av[i] = std::sin(0.37 * double(i));
  for (size_t i = 0; i < bv.size(); ++i) bv[i] = std::cos(0.11 * double(i));
  Tensor a = Tensor::of(av, {batch, m, k}, DType::F32).set_requires_grad();
  Tensor b = Tensor::of(bv, {batch, k, n}, DType::F32).set_requires_grad();
  const Tensor c = ops::bmm(a, b);
  backward(ops::sum(ops::square(c)));
  for (int64_t i = 0; i < batch; ++i) {
    Tensor ai = Tensor::of(std::vector<double>(av.begin() + i * m * k, av.begin() + (i + 1) * m * k), {m, k}, DType::F32)
                    .set_requires_grad();
    Tensor bi = Tensor::of(std::vector<double>(bv.begin() + i * k * n, bv.begin() + (i + 1) * k * n), {k, n}, DType::F32)
                    .set_requires_grad();
    const Tensor ci = ops::matmul(ai, bi);
    backward(ops::sum(ops::square(ci)));
    auto item = [&](const Tensor& x) { return ops::slice(x.detach(), 0, i, i + 1).values(); };
    EXPECT_EQ(item(c), ci.values()) << "item " << i;
    EXPECT_EQ(item(a.grad()), ai.grad().values()) << "item " << i;
    EXPECT_EQ(item(b.grad()), bi.grad().values()) << "item " << i;
  }
}

}  // namespace
}  // namespace sa
