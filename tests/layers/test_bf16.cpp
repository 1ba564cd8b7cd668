// precision = "bf16" on the CPU twin: where the operands are rounded (every matrix product's, the
// forward's and the backward's), that the LSTM over a whole sequence rounds where its step-by-step
// composition does, and that f32 runs are untouched outside the setting.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>
#include <random>
#include <string>

#include "engine/core/bf16.h"
#include "engine/core/device_counters.h"
#include "engine/engine.h"
#include "layers/lstm.h"
#include "layers/softmax.h"
#include "tests/test_util.h"

namespace sa {
namespace {

struct Bf16On {
  Bf16On() { set_bf16_matmuls(true); }
  ~Bf16On() { set_bf16_matmuls(false); }
};

std::vector<double> random_values(std::mt19937_64& rng, int64_t n, double scale = 1.0) {
  std::normal_distribution<double> g(0, scale);
  std::vector<double> v(static_cast<size_t>(n));
  for (double& e : v) e = g(rng);
  return v;
}

double round_bf16(double x) { return bf16_to_float(float_to_bf16(static_cast<float>(x))); }

// C = round(A) round(B) (f64 reference of the rounded operands), and the gradients
// dA = round(G) round(B)^T, dB = round(A)^T round(G): every operand of the three products rounded.
TEST(Bf16Matmuls, RoundBothOperandsOfEveryProduct) {
  std::mt19937_64 rng(5);
  const int64_t m = 7, k = 33, n = 5;
  const std::vector<double> a = random_values(rng, m * k), b = random_values(rng, k * n), g = random_values(rng, m * n);
  auto product = [](const std::vector<double>& x, const std::vector<double>& y, int64_t rows, int64_t inner, int64_t cols,
                    bool tx, bool ty) {
    std::vector<double> c(static_cast<size_t>(rows * cols));
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) {
        double s = 0;
        for (int64_t l = 0; l < inner; ++l)
          s += round_bf16(tx ? x[l * rows + i] : x[i * inner + l]) * round_bf16(ty ? y[j * inner + l] : y[l * cols + j]);
        c[i * cols + j] = s;
      }
    return c;
  };
  const std::vector<double> want_c = product(a, b, m, k, n, false, false), want_ga = product(g, b, m, n, k, false, true),
                            want_gb = product(a, g, k, m, n, true, false);
  std::vector<std::vector<double>> got[2];
  int64_t launches[2] = {0, 0};
  for (int on = 0; on < 2; ++on) {
    std::optional<Bf16On> scope;
    if (on) scope.emplace();
    Tensor ta = Tensor::of(a, {m, k}, DType::F32).set_requires_grad(), tb = Tensor::of(b, {k, n}, DType::F32).set_requires_grad();
    const Tensor tg = Tensor::of(g, {m, n}, DType::F32);
    const DeviceCounters before = device_counters();
    Tensor c = ops::matmul(ta, tb);
    EXPECT_EQ(c.dtype(), DType::F32);
    backward(ops::sum(ops::mul(c, tg)));
    launches[on] = (device_counters() - before).launches;
    EXPECT_EQ(ta.grad().dtype(), DType::F32);  // master gradients stay f32
    got[on] = {c.values(), ta.grad().values(), tb.grad().values()};
  }
  // Each of A, B and G rounded once: the forward's roundings of A and B serve the backward too.
  EXPECT_EQ(launches[1] - launches[0], 3);
  const std::vector<double>* want[] = {&want_c, &want_ga, &want_gb};
  for (int o = 0; o < 3; ++o) {
    double off_f32 = 0;
    for (size_t i = 0; i < want[o]->size(); ++i) {
      // rounded products are exact in f32; only the f32 sums round
      EXPECT_NEAR(got[1][o][i], (*want[o])[i], 2e-5 * (1 + std::abs((*want[o])[i]))) << "output " << o << " element " << i;
      off_f32 = std::max(off_f32, std::abs(got[0][o][i] - got[1][o][i]));
    }
    EXPECT_GT(off_f32, 1e-4) << "output " << o << ": bf16 and f32 products should differ by bf16's rounding";
  }
  // f64 operands are never rounded (gradient checks run in f64)
  Bf16On on;
  Tensor x = Tensor::of(a, {m, k}, DType::F64), y = Tensor::of(b, {k, n}, DType::F64);
  const std::vector<double> c64 = ops::matmul(x, y).values();
  double diff = 0;
  for (size_t i = 0; i < c64.size(); ++i) diff = std::max(diff, std::abs(c64[i] - product(a, b, m, k, n, false, false)[i]));
  EXPECT_GT(diff, 1e-4);
}

// f32 master weights, bf16 working copies (Bf16WeightCopies): inside a scope a weight, or a view
// of at least a quarter of it, reaches a product as its copy, equal bit for bit to rounding it
// there. A scope learns which weights the products took, and the next makes them all in one
// launch, from the weights' values when it opens.
TEST(Bf16WeightCopies, TakeTheRoundingsPlaceBitForBitMadeInOneLaunch) {
  Bf16On on;
  testing::ScopedEnv unset("SA_BF16_WEIGHT_COPIES", nullptr);
  std::mt19937_64 rng(8);
  Tensor W = Tensor::of(random_values(rng, 8 * 6), {8, 6}, DType::F32).set_requires_grad();
  Tensor V = Tensor::of(random_values(rng, 16 * 4), {16, 4}, DType::F32).set_requires_grad();
  const Tensor U = Tensor::of(random_values(rng, 4 * 4), {4, 4}, DType::F32), x = Tensor::of(random_values(rng, 3 * 6), {3, 6});
  auto launches_of = [](auto f) {
    const DeviceCounters before = device_counters();
    f();
    return (device_counters() - before).launches;
  };
  const std::vector<double> xw_alone = ops::matmul(x, W.rows(2, 8), false, true).values();
  std::vector<char> wanted;
  {
    Bf16WeightCopies copies({W, V, U}, wanted);  // nothing wanted yet: nothing made at once
    Tensor w6;
    EXPECT_EQ(launches_of([&] { w6 = gemm_operand(W.rows(2, 8)); }), 1) << "W copied when first taken";
    EXPECT_EQ(w6.dtype(), DType::BF16);
    EXPECT_EQ(w6.shape(), (Shape{6, 6}));
    EXPECT_EQ(w6.values(), W.rows(2, 8).to(DType::BF16).values());
    const std::vector<double> w_rounded = W.to(DType::BF16).values();
    EXPECT_EQ(launches_of([&] { EXPECT_EQ(gemm_operand(W).values(), w_rounded); }), 0);
    EXPECT_EQ(launches_of([&] { gemm_operand(V.rows(0, 2)); }), 1) << "2 of V's 16 rows: rounded alone";
    EXPECT_EQ(launches_of([&] { gemm_operand(x); }), 1) << "not a weight";
    EXPECT_EQ(ops::matmul(x, W.rows(2, 8), false, true).values(), xw_alone);
  }
  EXPECT_EQ(wanted, (std::vector<char>{1, 0, 0}));
  W.data<float>()[7] += 1.0f;  // an update between steps
  {
    const std::vector<double> w_rounded = W.to(DType::BF16).values();
    std::optional<Bf16WeightCopies> copies;
    EXPECT_EQ(launches_of([&] { copies.emplace(std::vector<Tensor>{W, V, U}, wanted); }), 1)
        << "the wanted weights in one multi_cast";
    EXPECT_EQ(launches_of([&] { EXPECT_EQ(gemm_operand(W).values(), w_rounded); }), 0) << "made from the updated W";
  }
  EXPECT_EQ(launches_of([&] { gemm_operand(W); }), 1) << "closed: rounded at each product again";
  {
    // SA_BF16_WEIGHT_COPIES=verify: a weight written while its copy is in use is caught at close
    testing::ScopedEnv verify("SA_BF16_WEIGHT_COPIES", "verify");
    Bf16WeightCopies copies({W, V, U}, wanted);
    gemm_operand(W);
    W.data<float>()[3] += 1.0f;
    EXPECT_THROW(copies.close(), std::exception);
  }
  testing::ScopedEnv off("SA_BF16_WEIGHT_COPIES", "0");
  Bf16WeightCopies none({W, V, U}, wanted);
  EXPECT_EQ(launches_of([&] { gemm_operand(W); }), 1) << "SA_BF16_WEIGHT_COPIES=0: no copies";
}

// The whole-sequence LSTM (ops::lstm_sequence, one tape node) against the step-by-step
// composition of ops (layers/lstm.h): under bf16 both round the same operands (the input, the
// previous output, the cell output h, and every backward product), so they agree to f32 sums.
TEST(Bf16Matmuls, LstmSequenceRoundsWhereItsStepCompositionDoes) {
  std::mt19937_64 rng(9);
  const int64_t T = 6, B = 3, in = 5, D = 8, P = 4;
  const std::vector<double> x = random_values(rng, T * B * in), W = random_values(rng, (in + P) * 4 * D, 0.4),
                            bias = random_values(rng, 4 * D, 0.1), WP = random_values(rng, D * P, 0.4),
                            gy = random_values(rng, T * B * P);
  std::vector<std::vector<double>> runs[3];
  for (int mode = 0; mode < 3; ++mode) {  // 0: sequence in f32, 1: sequence in bf16, 2: steps in bf16
    std::optional<Bf16On> scope;
    if (mode > 0) scope.emplace();
    Tensor tx = Tensor::of(x, {T, B, in}, DType::F32).set_requires_grad();
    LstmWeights w{Tensor::of(W, {in + P, 4 * D}, DType::F32).set_requires_grad(),
                  Tensor::of(bias, {4 * D}, DType::F32).set_requires_grad(),
                  Tensor::of(WP, {D, P}, DType::F32).set_requires_grad()};
    Tensor y;  // [T, B, P]
    if (mode < 2) {
      y = ops::lstm_sequence(tx, w.W, w.B, w.W_P, Tensor::zeros({B, D}), Tensor::zeros({B, P}), 3.0, 3.0)[0];
    } else {
      LstmState st{Tensor::zeros({B, D}), Tensor::zeros({B, P})};
      y = ops::permute(lstm_forward(w, ops::permute(tx, {1, 0, 2}), st, 3.0, 3.0), {1, 0, 2});
    }
    backward(ops::sum(ops::mul(y, Tensor::of(gy, {T, B, P}, DType::F32))));
    runs[mode] = {y.values(), tx.grad().values(), w.W.grad().values(), w.B.grad().values(), w.W_P.grad().values()};
  }
  testing::expect_outputs_near(runs[1], runs[2], 2e-5);
  double off = 0;
  for (size_t i = 0; i < runs[0][0].size(); ++i) off = std::max(off, std::abs(runs[0][0][i] - runs[1][0][i]));
  EXPECT_GT(off, 1e-5) << "the bf16 sequence should differ from the f32 one";
}

// The char CNN's convolution does its products in its own kernel: under bf16 it takes x and w
// rounded forward, and the gradient rounded with w (for x) and with x (for w) backward, as a GEMM
// would; the bias gradient sums the unrounded gradient. Against the f32 op on rounded inputs, on
// each device (CUDA's forward is then a bf16 GEMM: exact products, f32 sums in another order).
TEST(Bf16Matmuls, CharCnnConvolutionRoundsItsOperandsOnCpuAndGpu) {
  std::mt19937_64 rng(11);
  const int64_t N = 4, L = 9, Cin = 3, W = 3, Cout = 5;
  const std::vector<double> x = random_values(rng, N * L * Cin), w = random_values(rng, W * Cin * Cout, 0.5),
                            b = random_values(rng, Cout, 0.1), gy = random_values(rng, N * Cout);
  auto rounded = [](std::vector<double> v) {
    for (double& e : v) e = round_bf16(e);
    return v;
  };
  for (Device d : testing::cpu_and_gpu("the bf16 char CNN convolution")) {
    auto run = [&](bool bf16, const std::vector<double>& xv, const std::vector<double>& wv,
                   const std::vector<double>& gv) {
      std::optional<Bf16On> scope;
      if (bf16) scope.emplace();
      Tensor tx = Tensor::of(xv, {N, L, Cin}, DType::F32, d).set_requires_grad();
      Tensor tw = Tensor::of(wv, {W, Cin, Cout}, DType::F32, d).set_requires_grad();
      Tensor tb = Tensor::of(b, {Cout}, DType::F32, d).set_requires_grad();
      Tensor y = ops::conv1d_max(tx, tw, tb);
      backward(ops::sum(ops::mul(y, Tensor::of(gv, {N, Cout}, DType::F32, d))));
      return std::vector<std::vector<double>>{y.values(), tx.grad().values(), tw.grad().values(), tb.grad().values()};
    };
    const auto on = run(true, x, w, gy), f32 = run(false, x, w, gy);
    const auto want = run(false, rounded(x), rounded(w), rounded(gy));
    // The forward, gx and gw are the f32 op's on rounded operands; argmax positions are the same
    // (the rounded forward picks them); gb is the unrounded gradient's sum.
    SCOPED_TRACE(d.str());
    testing::expect_outputs_near({on[0], on[1], on[2]}, {want[0], want[1], want[2]}, 1e-6);
    testing::expect_outputs_near({on[3]}, {f32[3]}, 1e-6);
    double off = 0;
    for (size_t i = 0; i < on[0].size(); ++i) off = std::max(off, std::abs(on[0][i] - f32[0][i]));
    EXPECT_GT(off, 1e-4) << "bf16 should change the convolution";
  }
}

// bf16_rounded (the char CNN's operands) is one kernel: the same bits as a cast to bf16 and back,
// ties to even, infinities and NaN included, on the CPU and on CUDA.
TEST(Bf16Matmuls, TheRoundingKernelEqualsTheCastThereAndBackOnCpuAndGpu) {
  std::vector<float> v = {0.f, -0.f, 1.f, 1.00390625f /* 1 + 2^-8: a tie, stays 1 */, 1.01171875f /* 1 + 3 * 2^-8: a tie, rounds up */,
                          3.14159265f, -2.718281828f, 1e-40f, 3.3e38f, std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()};
  std::mt19937_64 rng(2);
  for (double e : random_values(rng, 1000, 10.0)) v.push_back(static_cast<float>(e));
  auto bits = [](const Tensor& t) {
    std::vector<uint32_t> out;
    const Tensor h = t.to(Device::cpu());
    for (int64_t i = 0; i < h.numel(); ++i) out.push_back(float_bits(h.data<float>()[i]));
    return out;
  };
  for (Device d : testing::cpu_and_gpu("the bf16 rounding kernel")) {
    const Tensor x = Tensor::from(v, {static_cast<int64_t>(v.size())}, d);
    Bf16On on;
    const DeviceCounters before = device_counters();
    const Tensor r = bf16_rounded(x);
    EXPECT_EQ((device_counters() - before).launches, 1);
    EXPECT_EQ(bits(r), bits(x.to(DType::BF16).to(DType::F32))) << d.str();
  }
}

// BERT's attention op under bf16 rounds the operands of its products (q k^T, P v, and the
// backward's four) where the unfused ops (bmm, softmax, dropout, bmm) round them: both agree to
// f32 sums, forward and gradients, on each device (CUDA: the batched-GEMM path).
TEST(Bf16Matmuls, AttentionRoundsWhereTheUnfusedOpsDoOnCpuAndGpu) {
  const int64_t B = 2, H = 2, T = 7, d = 8;
  std::mt19937_64 rng(13);
  const std::vector<double> qv = random_values(rng, B * H * T * d), kv = random_values(rng, B * H * T * d),
                            vv = random_values(rng, B * H * T * d), gv = random_values(rng, B * H * T * d);
  const std::vector<uint8_t> keys = {1, 1, 1, 1, 0, 1, 0, 1, 1, 1, 1, 1, 1, 1};
  for (Device dev : testing::cpu_and_gpu("bf16 attention")) {
    std::vector<std::vector<double>> runs[3];  // fused bf16, unfused bf16, fused f32
    for (int mode = 0; mode < 3; ++mode) {
      std::optional<Bf16On> scope;
      if (mode < 2) scope.emplace();
      Tensor q = Tensor::of(qv, {B, H, T, d}, DType::F32, dev).set_requires_grad();
      Tensor k = Tensor::of(kv, {B, H, T, d}, DType::F32, dev).set_requires_grad();
      Tensor v = Tensor::of(vv, {B, H, T, d}, DType::F32, dev).set_requires_grad();
      Generator g(7);
      Tensor out;
      if (mode != 1) {
        out = ops::attention(q, k, v, Tensor::from(keys, {B, T}, dev), 0.5, 0.2, &g);
      } else {
        out = testing::unfused_attention(q, k, v, keys, 0.5, 0.2, g);
      }
      backward(ops::sum(ops::mul(out, Tensor::of(gv, {B, H, T, d}, DType::F32, dev))));
      runs[mode] = {out.values(), q.grad().values(), k.grad().values(), v.grad().values()};
    }
    SCOPED_TRACE(dev.str());
    testing::expect_outputs_near(runs[0], runs[1], 2e-5);
    double off = 0;
    for (size_t i = 0; i < runs[0][0].size(); ++i) off = std::max(off, std::abs(runs[0][0][i] - runs[2][0][i]));
    EXPECT_GT(off, 1e-4) << "bf16 should change the attention";
  }
}

// The fused attention on CUDA under bf16 runs on tensor cores (bf16 tiles, f32 sums). It rounds at
// the CPU's points but not always the same values (its probabilities are rounded before the final
// normalisation: an online softmax cannot wait for it), so it is held to bf16's own effect on the
// CPU (f32 against bf16): on average closer to the CPU's bf16 than that, and no element further
// than twice its largest. Forward and every gradient, at BERT's head size 64 over 128 and 512
// positions, head size 128, and head sizes 20 and 16 over 70 and 40 positions (partial tiles).
// Padded keys, a sentence with every key padded, dropout. The batched-GEMM path is held to the
// same bounds. (A model of the kernel's rounding in NumPy gave 0.2-0.75 of the mean and up to
// 1.43 of the largest.)
TEST(Bf16Matmuls, CudaFusedAttentionOnTensorCoresStaysWithinBf16OfTheCpu) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no GPU present: tensor-core attention check skipped";
  testing::ScopedEnv path_env("SA_ATTENTION", nullptr);
  struct Case {
    int64_t T, d;
  };
  for (const Case c : {Case{128, 64}, Case{512, 64}, Case{128, 128}, Case{70, 20}, Case{40, 16}}) {
    if (!cuda::fused_attention_on_tensor_cores(0, c.d, true)) {  // H100 and H200 take every case
      std::printf("[ SKIP     ] head size %ld: this GPU runs no tensor-core attention in bf16\n", long(c.d));
      continue;
    }
    const int64_t B = 3, H = 2, T = c.T, d = c.d, n = B * H * T * d;
    std::mt19937_64 rng(static_cast<uint64_t>(T * 1000 + d));
    const std::vector<double> qv = random_values(rng, n), kv = random_values(rng, n), vv = random_values(rng, n),
                              gv = random_values(rng, n);
    std::vector<uint8_t> keys(static_cast<size_t>(B * T), 1);
    for (int64_t j = T - T / 4; j < T; ++j) keys[static_cast<size_t>(T + j)] = 0;  // sentence 2 padded
    for (int64_t j = 0; j < T; ++j) keys[static_cast<size_t>(2 * T + j)] = 0;       // sentence 3 all padding
    auto run = [&](Device dev, bool bf16, const char* path) {
      path_env.set(path);
      std::optional<Bf16On> scope;
      if (bf16) scope.emplace();
      const Shape s{B, H, T, d};
      Tensor q = Tensor::of(qv, s, DType::F32, dev).set_requires_grad();
      Tensor k = Tensor::of(kv, s, DType::F32, dev).set_requires_grad();
      Tensor v = Tensor::of(vv, s, DType::F32, dev).set_requires_grad();
      Generator g(5);
      Tensor out = ops::attention(q, k, v, Tensor::from(keys, {B, T}, dev), 1.0 / std::sqrt(double(d)), 0.1, &g);
      backward(ops::sum(ops::mul(out, Tensor::of(gv, s, DType::F32, dev))));
      return std::vector<std::vector<double>>{out.values(), q.grad().values(), k.grad().values(), v.grad().values()};
    };
    struct Diff {
      double max = 0, mean = 0;
    };
    auto diff = [](const std::vector<double>& a, const std::vector<double>& b) {
      Diff r;
      for (size_t i = 0; i < a.size(); ++i) r.max = std::max(r.max, std::abs(a[i] - b[i])), r.mean += std::abs(a[i] - b[i]);
      r.mean /= static_cast<double>(a.size());
      return r;
    };
    const auto cpu_bf16 = run(Device::cpu(), true, "gemm"), cpu_f32 = run(Device::cpu(), false, "gemm");
    for (const char* path : {"fused", "gemm"}) {
      const auto gpu = run(Device::cuda(0), true, path);
      const char* names[] = {"output", "dq", "dk", "dv"};
      for (int i = 0; i < 4; ++i) {
        const Diff bf16_effect = diff(cpu_f32[i], cpu_bf16[i]), off = diff(gpu[i], cpu_bf16[i]);
        const std::string what = std::string(path) + " T=" + std::to_string(T) + " d=" + std::to_string(d) + " " +
                                 names[i] + ": CUDA against the CPU under bf16, bf16 against f32 on the CPU";
        EXPECT_GT(bf16_effect.mean, 0) << what;
        EXPECT_LE(off.mean, bf16_effect.mean) << what << " (mean)";
        EXPECT_LE(off.max, 2 * bf16_effect.max) << what << " (largest)";
      }
      // The padded sentence: its outputs and gradients are zero on both devices.
      for (int i = 0; i < 4; ++i)
        for (int64_t e = 2 * H * T * d; e < n; ++e) ASSERT_EQ(gpu[i][static_cast<size_t>(e)], 0.0) << path << " " << names[i];
    }
  }
}

// The fused candidate softmax (the sampled softmax's and SaBERT's path) under bf16 rounds x and
// the candidates' rows for its logits, and dL, Wc and x for its gradient products, as the unfused
// ops (ops::matmul) do; the true rows' logits and the bias gradient stay f32 in both.
TEST(Bf16Matmuls, CandidateSoftmaxRoundsWhereTheUnfusedOpsDoOnCpuAndGpu) {
  std::mt19937_64 rng(13);
  const int64_t N = 9, P = 24, V = 40;
  const std::vector<double> xv = random_values(rng, N * P), Wv = random_values(rng, V * P, 0.5), bv = random_values(rng, V, 0.1);
  const std::vector<int32_t> truth = {1, 5, 7, 13, 2, 5, 30, 31, 0}, sampled = {2, 4, 7, 8, 16, 11, 22, 23, 39, 5};
  for (Device d : testing::cpu_and_gpu("bf16 candidate softmax")) {
    std::vector<std::vector<double>> runs[3];
    for (int mode = 0; mode < 3; ++mode) {  // 0: fused f32, 1: fused bf16, 2: unfused bf16
      std::optional<Bf16On> scope;
      if (mode > 0) scope.emplace();
      Tensor x = Tensor::of(xv, {N, P}, DType::F32, d).set_requires_grad();
      Tensor W = Tensor::of(Wv, {V, P}, DType::F32, d).set_requires_grad(), b = Tensor::of(bv, {V, 1}, DType::F32, d).set_requires_grad();
      Tensor loss = mode < 2 ? candidate_softmax_loss(x, W, b, truth, sampled) : candidate_softmax_loss_unfused(x, W, b, truth, sampled);
      backward(ops::sum(loss));
      auto dense = [&](const Tensor& p) { return p.grad().defined() ? p.grad().values() : p.sparse_grad().to_dense(V, p.dim(1)).values(); };
      runs[mode] = {loss.values(), x.grad().values(), dense(W), dense(b)};
    }
    testing::expect_outputs_near(runs[1], runs[2], 2e-5);
    double off = 0;
    for (size_t i = 0; i < runs[0][0].size(); ++i) off = std::max(off, std::abs(runs[0][0][i] - runs[1][0][i]));
    EXPECT_GT(off, 1e-5) << d.str() << ": bf16 logits should differ from f32 ones";
  }
}

}  // namespace
}  // namespace sa
