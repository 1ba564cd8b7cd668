// Every op on CUDA, forward and backward, against the CPU reference in f32. Skipped without a GPU.
// Tolerance: |cuda - cpu| <= 1e-5 + 1e-4 * |cpu| (f32; sums may be ordered differently).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>

#include "engine/core/device_counters.h"
#include "engine/upload_paths.h"
#include "tests/op_runner.h"
#include "tests/test_util.h"

namespace sa::testing {
namespace {

void expect_close(const Tensor& cpu, const Tensor& gpu, const std::string& what) {
  ASSERT_EQ(cpu.shape(), gpu.shape()) << what;
  std::vector<double> a = cpu.values(), b = gpu.values();
  int shown = 0;
  for (size_t i = 0; i < a.size() && shown < 5; ++i)
    if (!(std::abs(a[i] - b[i]) <= 1e-5 + 1e-4 * std::abs(a[i]))) {
      ADD_FAILURE() << what << " element " << i << ": cpu " << a[i] << " cuda " << b[i];
      ++shown;
    }
}

// x as the tensor cores take an f32 operand in TF32 (wmma::__float_to_tf32, cvt.rna.tf32.f32):
// 10 explicit mantissa bits, rounded to nearest with ties away from zero.
double tf32_rounded(double v) {
  const float x = static_cast<float>(v);
  if (!std::isfinite(x)) return x;
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  bits = (bits + 0x1000u) & 0xffffe000u;  // half of the 13 dropped bits' unit, then drop them
  float r;
  std::memcpy(&r, &bits, sizeof r);
  return r;
}

std::vector<double> tf32_rounded(std::vector<double> v) {
  for (double& e : v) e = tf32_rounded(e);
  return v;
}

// The model the TF32 attention test measures against where cuBLAS keeps a GEMM in f32: ties go
// away from zero, 10 bits are kept, and it moves an input by at most half a TF32 unit.
TEST(Tf32Model, RoundsTenMantissaBitsToNearestTiesAway) {
  const double u = std::ldexp(1.0, -10);  // TF32's unit at 1
  EXPECT_EQ(tf32_rounded(1.0 + u / 2), 1.0 + u);
  EXPECT_EQ(tf32_rounded(-(1.0 + u / 2)), -(1.0 + u));
  EXPECT_EQ(tf32_rounded(1.0 + u / 2 - std::ldexp(1.0, -23)), 1.0);
  EXPECT_EQ(tf32_rounded(3.0 * u), 3.0 * u);
  std::mt19937_64 rng(1);
  std::normal_distribution<double> g(0, 1);
  for (int i = 0; i < 1000; ++i) {
    const double x = static_cast<float>(g(rng));
    EXPECT_LE(std::abs(tf32_rounded(x) - x), std::ldexp(std::abs(x), -11) * (1 + 1e-6)) << x;
  }
}

class CudaVsCpu : public ::testing::TestWithParam<size_t> {};

TEST_P(CudaVsCpu, ForwardAndBackwardMatch) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no GPU present: CUDA-vs-CPU comparison skipped";
  const OpCase& c = op_cases()[GetParam()];
  // attention has two CUDA paths (batched GEMMs, or the fused kernels with SA_ATTENTION=fused)
  const bool two_paths = c.op == ops::Op::attention;
  ScopedEnv path_env("SA_ATTENTION", nullptr);
  for (int path = 0; path < (two_paths ? 2 : 1); ++path)
  for (uint64_t seed : {11u, 12u}) {
    if (two_paths) path_env.set(path ? "fused" : "gemm");
    std::mt19937_64 rng(seed * 104729 + GetParam());
    std::vector<CaseInput> inputs = c.make(rng);
    std::vector<Tensor> ws = loss_weights(c, inputs, rng);
    CaseRun cpu = run_case(c, inputs, ws, DType::F32, Device::cpu());
    CaseRun gpu = run_case(c, inputs, ws, DType::F32, Device::cuda(0));
    for (size_t k = 0; k < cpu.outputs.size(); ++k) expect_close(cpu.outputs[k], gpu.outputs[k], c.name + " output");
    for (size_t i = 0; i < cpu.grads.size(); ++i)
      if (cpu.grads[i].defined()) expect_close(cpu.grads[i], gpu.grads[i], c.name + " gradient " + std::to_string(i));
  }
}

// Attention at BERT's sizes (head size 64; 128 and 512 positions, the lengths BERT pretrains at),
// with padded keys and dropout, forward and backward against the CPU in f32 (same tolerance), on
// both CUDA paths: batched GEMMs (taken at these sizes) and the fused kernels (SA_ATTENTION=fused,
// taken where the scores would not fit).
TEST(CudaAttention, BertSizesMatchTheCpu) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no GPU present: CUDA attention at BERT sizes skipped";
  ScopedEnv path_env("SA_ATTENTION", nullptr);
  for (const char* path : {"gemm", "fused"})
  for (int64_t T : {128, 512}) {
    path_env.set(path);
    const int64_t B = 2, H = 4, d = 64;
    std::mt19937_64 rng(static_cast<uint64_t>(T));
    std::uniform_real_distribution<double> u(-1.5, 1.5);
    auto random = [&](const Shape& s) {
      std::vector<double> v(static_cast<size_t>(numel(s)));
      for (double& e : v) e = u(rng);
      return v;
    };
    const Shape s{B, H, T, d};
    const std::vector<double> q = random(s), k = random(s), v = random(s), w = random(s);
    std::vector<uint8_t> keys(static_cast<size_t>(B * T), 1);
    for (int64_t j = T - T / 4; j < T; ++j) keys[static_cast<size_t>(T + j)] = 0;  // sentence 2 padded
    std::vector<std::vector<Tensor>> out;
    for (Device dev : {Device::cpu(), Device::cuda(0)}) {
      Tensor tq = Tensor::of(q, s, DType::F32, dev).set_requires_grad(), tk = Tensor::of(k, s, DType::F32, dev).set_requires_grad(),
             tv = Tensor::of(v, s, DType::F32, dev).set_requires_grad();
      Generator g(99);
      Tensor o = ops::attention(tq, tk, tv, Tensor::from(keys, {B, T}, dev), 0.125, 0.1, &g);
      backward(ops::sum(ops::mul(o, Tensor::of(w, s, DType::F32, dev))));
      out.push_back({o, tq.grad(), tk.grad(), tv.grad()});
    }
    const char* names[] = {"output", "dq", "dk", "dv"};
    for (int i = 0; i < 4; ++i)
      expect_close(out[0][i], out[1][i], std::string(path) + " attention T=" + std::to_string(T) + " " + names[i]);
  }
}

// Under precision = "tf32" the fused path runs the tensor-core kernels with TF32 operands (the
// CPU has no TF32: it computes in f32). They must be as close to the CPU as TF32 allows: on
// average within 1.5x of the larger of two references' differences from the CPU, no element
// beyond 3x the larger largest (a NumPy model of both roundings gave 1.06x and 1.54x at most).
// The references: the batched-GEMM path under TF32, and the CPU run on inputs rounded to TF32. The
// second is needed where cuBLAS keeps a GEMM in f32 (TF32_TENSOR_OP_MATH allows tensor cores, it
// does not demand them): on an H100 at T = 70, d = 20 (leading dimension 70: rows 8-byte aligned,
// not 16) the GEMM path differed from the CPU by f32 rounding alone (a sum of 0.00037 over the
// output) while a TF32 model of the kernel gives 0.33 (0.30 rounding the inputs only), and the
// kernel 0.356. Head sizes 64 (T 128, 512), 128 and 20 (T 70), padded keys, dropout.
TEST(CudaAttention, FusedOnTensorCoresUnderTf32IsAsCloseAsTheGemmPath) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no GPU present: TF32 tensor-core attention skipped";
  ScopedEnv path_env("SA_ATTENTION", nullptr);
  struct Tf32 {
    Tf32() { backend_uncounted(Device::cuda(0)).set_tf32(true); }
    ~Tf32() { backend_uncounted(Device::cuda(0)).set_tf32(false); }
  } tf32;
  struct Case {
    int64_t T, d;
  };
  for (const Case c : {Case{128, 64}, Case{512, 64}, Case{128, 128}, Case{70, 20}}) {
    if (!cuda::fused_attention_on_tensor_cores(0, c.d, false)) {  // H100 and H200 take every case
      std::printf("[ SKIP     ] head size %ld: this GPU runs no tensor-core attention in TF32\n", long(c.d));
      continue;
    }
    const int64_t B = 2, H = 2, T = c.T, d = c.d;
    const Shape s{B, H, T, d};
    std::mt19937_64 rng(static_cast<uint64_t>(T * 7 + d));
    std::normal_distribution<double> g(0, 1);
    auto random = [&] {
      std::vector<double> v(static_cast<size_t>(numel(s)));
      for (double& e : v) e = g(rng);
      return v;
    };
    const std::vector<double> q = random(), k = random(), v = random(), w = random();
    std::vector<uint8_t> keys(static_cast<size_t>(B * T), 1);
    for (int64_t j = T - T / 4; j < T; ++j) keys[static_cast<size_t>(T + j)] = 0;
    auto run = [&](Device dev, const char* path) {
      path_env.set(path);
      Tensor tq = Tensor::of(q, s, DType::F32, dev).set_requires_grad(),
             tk = Tensor::of(k, s, DType::F32, dev).set_requires_grad(),
             tv = Tensor::of(v, s, DType::F32, dev).set_requires_grad();
      Generator gen(3);
      Tensor o = ops::attention(tq, tk, tv, Tensor::from(keys, {B, T}, dev), 1.0 / std::sqrt(double(d)), 0.1, &gen);
      backward(ops::sum(ops::mul(o, Tensor::of(w, s, DType::F32, dev))));
      return std::vector<std::vector<double>>{o.values(), tq.grad().values(), tk.grad().values(), tv.grad().values()};
    };
    const auto cpu = run(Device::cpu(), "gemm"), gemms = run(Device::cuda(0), "gemm"), fused = run(Device::cuda(0), "fused");
    // The TF32 model: the CPU on q, k, v and the output's gradient (w) rounded as the kernels round them.
    const std::vector<double> q32 = tf32_rounded(q), k32 = tf32_rounded(k), v32 = tf32_rounded(v), w32 = tf32_rounded(w);
    auto run_model = [&] {
      path_env.set("gemm");
      Tensor tq = Tensor::of(q32, s, DType::F32).set_requires_grad(), tk = Tensor::of(k32, s, DType::F32).set_requires_grad(),
             tv = Tensor::of(v32, s, DType::F32).set_requires_grad();
      Generator gen(3);
      Tensor o = ops::attention(tq, tk, tv, Tensor::from(keys, {B, T}), 1.0 / std::sqrt(double(d)), 0.1, &gen);
      backward(ops::sum(ops::mul(o, Tensor::of(w32, s, DType::F32))));
      return std::vector<std::vector<double>>{o.values(), tq.grad().values(), tk.grad().values(), tv.grad().values()};
    };
    const auto model = run_model();
    const char* names[] = {"output", "dq", "dk", "dv"};
    for (int i = 0; i < 4; ++i) {  // sums of |difference| over the elements ("mean" up to the count)
      double gmax = 0, gmean = 0, fmax = 0, fmean = 0, tmax = 0, tmean = 0;
      for (size_t e = 0; e < cpu[i].size(); ++e) {
        const double ge = std::abs(gemms[i][e] - cpu[i][e]), fe = std::abs(fused[i][e] - cpu[i][e]),
                     te = std::abs(model[i][e] - cpu[i][e]);
        gmax = std::max(gmax, ge), gmean += ge, fmax = std::max(fmax, fe), fmean += fe;
        tmax = std::max(tmax, te), tmean += te;
      }
      const std::string what = "T=" + std::to_string(T) + " d=" + std::to_string(d) + " " + names[i];
      EXPECT_GT(gmean, 0) << what << ": the GEMM path should differ from the CPU";
      EXPECT_GT(tmean, 0) << what << ": rounding the inputs to TF32 should change the CPU's result";
      if (gmean < 0.1 * tmean)
        std::printf("[ NOTE     ] %s: cuBLAS kept this shape's GEMMs in f32 (%.3g against the TF32 model's %.3g)\n",
                    what.c_str(), gmean, tmean);
      const double mean_ref = std::max(gmean, tmean), max_ref = std::max(gmax, tmax);
      EXPECT_LE(fmean, 1.5 * mean_ref) << what << " (summed difference from the CPU: fused against " << gmean
                                       << " for the GEMMs, " << tmean << " for the TF32 model)";
      EXPECT_LE(fmax, 3 * max_ref) << what << " (largest; GEMMs " << gmax << ", TF32 model " << tmax << ")";
    }
  }
}

// Rows long enough that CUDA splits each over many blocks (a whole-tensor sum, a long max): the
// partial results must add up to the CPU's, and the argmax must stay the first of equal maxima.
// f64, so the only difference is the summation order: |cuda - cpu| <= 1e-12 * sum |x|.
TEST(CudaReductions, LongRowsSplitOverBlocksMatchTheCpu) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no GPU present: CUDA reduction check skipped";
  const int64_t rows = 3, n = 400'003;
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> v(static_cast<size_t>(rows * n));
  for (double& e : v) e = u(rng);
  // Row 1 holds its maximum twice, far apart (in different blocks): the first must win.
  v[static_cast<size_t>(n + 1000)] = v[static_cast<size_t>(n + 350'000)] = 7.0;
  double abs_sum = 0;
  for (double e : v) abs_sum += std::abs(e);
  auto run = [&](Device d) {
    Tensor x = Tensor::of(v, {rows, n}, DType::F64).to(d).set_requires_grad();
    Tensor total = ops::sum(x), per_row = ops::sum(x, 1), best = ops::max(x, 1);
    backward(ops::sum(ops::scale(best, 2.0)));
    return std::vector<std::vector<double>>{total.values(), per_row.values(), best.values(), x.grad().values()};
  };
  std::vector<std::vector<double>> cpu = run(Device::cpu()), gpu = run(Device::cuda(0));
  for (size_t k = 0; k < cpu.size(); ++k) {
    ASSERT_EQ(cpu[k].size(), gpu[k].size());
    for (size_t i = 0; i < cpu[k].size(); ++i)
      ASSERT_NEAR(cpu[k][i], gpu[k][i], 1e-12 * abs_sum) << "result " << k << " element " << i;
  }
  EXPECT_EQ(gpu[3][static_cast<size_t>(n + 1000)], 2.0);  // the first maximum of row 1 gets the gradient
  EXPECT_EQ(gpu[3][static_cast<size_t>(n + 350'000)], 0.0);
}

// The gradient-norm primitive on the GPU (blocks' partials added in order) against the CPU's.
TEST(CudaReductions, SumSquaresMatchesTheCpu) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no GPU present: CUDA reduction check skipped";
  std::mt19937_64 rng(6);
  std::normal_distribution<double> g(0, 1);
  for (DType dt : {DType::F32, DType::F64})
    for (int64_t n : {int64_t{1}, int64_t{1000}, int64_t{400'003}}) {
      std::vector<double> v(static_cast<size_t>(n));
      for (double& e : v) e = g(rng);
      const Tensor x = Tensor::of(v, {n}, dt);
      Tensor cpu = Tensor::empty({1}, DType::F64), gpu = Tensor::empty({1}, DType::F64, Device::cuda(0));
      backend(Device::cpu()).sum_squares(x, cpu);
      backend(Device::cuda(0)).sum_squares(x.to(Device::cuda(0)), gpu);
      EXPECT_NEAR(gpu.values()[0], cpu.values()[0], 1e-12 * cpu.values()[0]) << dtype_name(dt) << " n=" << n;
    }
}

// cuDNN's cell clip is not TF's, so the cuDNN path refuses a layer with a clip instead of computing
// another function.
TEST(CudaLstm, CudnnPathRefusesClips) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no GPU present: cuDNN path check skipped";
  if (!ops::lstm_uses_cudnn(Device::cuda(0), ops::LstmPath::Cudnn, 0.0, 0.0, 4, 2))
    GTEST_SKIP() << "built without cuDNN";
  EXPECT_TRUE(ops::lstm_uses_cudnn(Device::cuda(0), ops::LstmPath::Auto, 0.0, 0.0, 4, 2));
  EXPECT_FALSE(ops::lstm_uses_cudnn(Device::cuda(0), ops::LstmPath::Auto, 3.0, 0.0, 4, 2));
  EXPECT_FALSE(ops::lstm_uses_cudnn(Device::cuda(0), ops::LstmPath::Auto, 0.0, 3.0, 4, 2));
  EXPECT_THROW(ops::lstm_uses_cudnn(Device::cuda(0), ops::LstmPath::Cudnn, 3.0, 0.0, 4, 2), Error);
  EXPECT_THROW(ops::lstm_uses_cudnn(Device::cuda(0), ops::LstmPath::Cudnn, 0.0, 3.0, 4, 2), Error);
  // Sizes cuDNN cannot run fall back to the step kernels, clips or not.
  EXPECT_FALSE(ops::lstm_uses_cudnn(Device::cuda(0), ops::LstmPath::Cudnn, 3.0, 3.0, 4, 4));
}

// Broadcast gradients with few outputs and long preimages (a bias over many rows, a middle axis):
// CUDA splits each preimage over blocks; the sums must equal the CPU's up to order (f64).
TEST(CudaReductions, BroadcastGradientsSplitOverBlocksMatchTheCpu) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no GPU present: CUDA reduction check skipped";
  struct Case {
    Shape x, b;
  };
  for (const Case& c : {Case{{3000, 37}, {37}}, Case{{40, 2000, 5}, {40, 1, 5}}, Case{{7, 9000}, {1, 9000}}}) {
    std::mt19937_64 rng(17);
    std::uniform_real_distribution<double> u(-1, 1);
    std::vector<double> xv(static_cast<size_t>(numel(c.x))), bv(static_cast<size_t>(numel(c.b)));
    for (double& e : xv) e = u(rng);
    for (double& e : bv) e = u(rng);
    auto run = [&](Device d) {
      Tensor x = Tensor::of(xv, c.x, DType::F64).to(d).set_requires_grad();
      Tensor b = Tensor::of(bv, c.b, DType::F64).to(d).set_requires_grad();
      Tensor y = ops::add(x, b);
      backward(ops::sum(ops::mul(y, y)));
      return b.grad().values();
    };
    const std::vector<double> cpu = run(Device::cpu()), gpu = run(Device::cuda(0));
    ASSERT_EQ(cpu.size(), gpu.size());
    for (size_t i = 0; i < cpu.size(); ++i) ASSERT_NEAR(cpu[i], gpu[i], 1e-9) << to_string(c.x) << " element " << i;
  }
}

// n values drawn uniformly from (-1, 1).
std::vector<double> uniform_values(std::mt19937_64& rng, int64_t n) {
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> v(static_cast<size_t>(n));
  for (double& e : v) e = u(rng);
  return v;
}

// The char CNN at bilm-tf's sizes (50 characters, 16 dims, width 7, hundreds of filters sharing
// each position): the CUDA backward buckets filters by position, and sums the weight gradient in
// tiles of filters and samples (300 samples: parts of more than one tile); it must equal the CPU (f64).
TEST(CudaConv, CharCnnBackwardAtBilmSizesMatchesTheCpu) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no GPU present: CUDA conv check skipped";
  for (const int64_t N : {40, 300}) {
  SCOPED_TRACE(N);
  const int64_t L = 50, Cin = 16, W = 7, Cout = 300;
  std::mt19937_64 rng(23);
  auto draw = [&](int64_t n) { return uniform_values(rng, n); };
  const std::vector<double> xv = draw(N * L * Cin), wv = draw(W * Cin * Cout), bv = draw(Cout), gv = draw(N * Cout);
  auto run = [&](Device d) {
    Tensor x = Tensor::of(xv, {N, L, Cin}, DType::F64).to(d).set_requires_grad();
    Tensor w = Tensor::of(wv, {W, Cin, Cout}, DType::F64).to(d).set_requires_grad();
    Tensor b = Tensor::of(bv, {Cout}, DType::F64).to(d).set_requires_grad();
    backward(ops::sum(ops::mul(ops::conv1d_max(x, w, b), Tensor::of(gv, {N, Cout}, DType::F64).to(d))));
    return std::vector<std::vector<double>>{x.grad().values(), w.grad().values(), b.grad().values()};
  };
  const auto cpu = run(Device::cpu()), gpu = run(Device::cuda(0));
  for (size_t k = 0; k < cpu.size(); ++k)
    for (size_t i = 0; i < cpu[k].size(); ++i) ASSERT_NEAR(cpu[k][i], gpu[k][i], 1e-9) << "gradient " << k << " element " << i;
  }
}

// The CUDA forward runs im2col, a GEMM and the max over positions in chunks of samples (about
// 256 MiB of f32 per buffer: 1,337 samples of 49 positions and 1,024 filters here): three chunks,
// the last a partial one, must give the CPU's maxima.
TEST(CudaConv, CharCnnForwardInSeveralChunksMatchesTheCpu) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no GPU present: CUDA conv check skipped";
  const int64_t N = 2900, L = 50, Cin = 16, W = 2, Cout = 1024;
  std::mt19937_64 rng(29);
  auto draw = [&](int64_t n) { return uniform_values(rng, n); };
  const std::vector<double> xv = draw(N * L * Cin), wv = draw(W * Cin * Cout), bv = draw(Cout);
  auto run = [&](Device d) {
    const Tensor x = Tensor::of(xv, {N, L, Cin}, DType::F64).to(d);
    const Tensor w = Tensor::of(wv, {W, Cin, Cout}, DType::F64).to(d), b = Tensor::of(bv, {Cout}, DType::F64).to(d);
    return ops::conv1d_max(x, w, b).values();
  };
  const std::vector<double> cpu = run(Device::cpu()), gpu = run(Device::cuda(0));
  ASSERT_EQ(cpu.size(), gpu.size());
  for (size_t i = 0; i < cpu.size(); ++i) ASSERT_NEAR(cpu[i], gpu[i], 1e-9) << "sample " << i / Cout << " filter " << i % Cout;
}

// A sparse gradient's entries summed per id on the GPU (sorted there) equal the CPU's: the same ids
// in the same order, and the same sums bit for bit (each adds its rows in their order).
TEST(CudaRows, CoalesceEqualsTheCpu) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no GPU present: CUDA coalesce check skipped";
  std::mt19937_64 rng(9);
  for (DType dt : {DType::F32, DType::F64}) {
    SparseGrad cpu, gpu;
    for (int64_t n : {3000, 1, 517}) {  // three uses of the table, ids repeating within and across them
      std::vector<double> ids(static_cast<size_t>(n)), rows(static_cast<size_t>(n * 7));
      for (double& v : ids) v = static_cast<double>(rng() % 50);
      for (double& v : rows) v = std::uniform_real_distribution<double>(-1, 1)(rng);
      for (Device d : {Device::cpu(), Device::cuda(0)}) {
        SparseGrad& g = d.is_cuda() ? gpu : cpu;
        g.indices.push_back(Tensor::of(ids, {n}, DType::I32).to(d));
        g.rows.push_back(Tensor::of(rows, {n, 7}, dt).to(d));
      }
    }
    auto [cid, crow] = cpu.coalesce();
    auto [gid, grow] = gpu.coalesce();
    EXPECT_EQ(cid.values(), gid.values());
    EXPECT_EQ(crow.values(), grow.values());
    EXPECT_EQ(cid.numel(), 50);
  }
  // One id far more often than the 256 rows CUDA sums in one piece (the padding character of a
  // char-embedding gradient): the pieces are added in order, equal up to rounding (f64).
  SparseGrad cpu, gpu;
  std::vector<double> ids(20'000), rows(20'000 * 3);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = i % 10 == 0 ? static_cast<double>(i % 7) : 3.0;
  for (double& v : rows) v = std::uniform_real_distribution<double>(-1, 1)(rng);
  for (SparseGrad* g : {&cpu, &gpu}) {
    const Device d = g == &gpu ? Device::cuda(0) : Device::cpu();
    g->indices.push_back(Tensor::of(ids, {20'000}, DType::I32).to(d));
    g->rows.push_back(Tensor::of(rows, {20'000, 3}, DType::F64).to(d));
  }
  auto [cid, crow] = cpu.coalesce();
  auto [gid, grow] = gpu.coalesce();
  EXPECT_EQ(cid.values(), gid.values());
  const std::vector<double> a = crow.values(), b = grow.values();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-10) << "element " << i;
}

// The optimizer's coalescing on CUDA keeps the count of distinct ids on the device: one slot per
// entry, the distinct ids first (equal to the CPU's, sums bit for bit for runs of <= 256 rows),
// then id -1 with zero rows, and no host read. An exact coalesce afterwards drops the padding.
TEST(CudaCoalesce, PaddedSlotsNeedNoHostRead) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no GPU present: CUDA padded coalescing skipped";
  std::mt19937_64 rng(17);
  const int64_t n = 3'000, d = 5;
  std::vector<double> ids(static_cast<size_t>(n)), rows(static_cast<size_t>(n * d));
  for (double& v : ids) v = static_cast<double>(rng() % 40);
  for (double& v : rows) v = std::uniform_real_distribution<double>(-1, 1)(rng);
  SparseGrad cpu, gpu;
  for (SparseGrad* g : {&cpu, &gpu}) {
    const Device dev = g == &gpu ? Device::cuda(0) : Device::cpu();
    g->indices.push_back(Tensor::of(ids, {n}, DType::I32).to(dev));
    g->rows.push_back(Tensor::of(rows, {n, d}, DType::F32).to(dev));
  }
  cpu.coalesce_in_place(true);
  EXPECT_FALSE(cpu.padded);  // the CPU never pads
  const DeviceCounters before = device_counters();
  gpu.coalesce_in_place(true);
  EXPECT_EQ((device_counters() - before).host_reads, 0);
  EXPECT_TRUE(gpu.padded);
  const std::vector<double> cid = cpu.indices[0].values(), gid = gpu.indices[0].values();
  const std::vector<double> crow = cpu.rows[0].values(), grow = gpu.rows[0].values();
  ASSERT_EQ(gid.size(), static_cast<size_t>(n));
  const size_t U = cid.size();
  for (size_t u = 0; u < gid.size(); ++u) EXPECT_EQ(gid[u], u < U ? cid[u] : -1.0) << "slot " << u;
  for (size_t e = 0; e < grow.size(); ++e) EXPECT_EQ(grow[e], e < U * d ? crow[e] : 0.0) << "element " << e;
  gpu.coalesce_in_place(false);
  EXPECT_FALSE(gpu.padded);
  EXPECT_EQ(gpu.indices[0].values(), cid);
  EXPECT_EQ(gpu.rows[0].values(), crow);
}

// Uploads return before the copy has run (staged in a ring of 16 pinned slots): more uploads
// than slots, each from a host buffer dropped at once, each used by a kernel right away, one
// larger than a slot (copied synchronously), all arrive whole and in order. Both ways: copied on
// the backend's stream, and on the copy stream (SA_COPY_STREAM=1), which must have taken them.
TEST(CudaUpload, StagedUploadsArriveWholeAndInOrder) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no GPU present: staged uploads not checked";
  const Device gpu = Device::cuda(0);
  for (const char* side : {"0", "1"}) {
    SCOPED_TRACE(std::string("SA_COPY_STREAM=") + side);
    ScopedEnv copy_stream("SA_COPY_STREAM", side);
    const cuda::UploadPaths before = cuda::upload_paths(0);
    Tensor sum = Tensor::zeros({3000}, DType::F64, gpu);
    std::vector<Tensor> kept;
    double want = 0;
    for (int i = 0; i < 100; ++i) {
      Tensor up = Tensor::of(std::vector<double>(3000, static_cast<double>(i)), {3000}, DType::F64).to(gpu);
      sum = ops::add(sum, up);  // queued behind the upload
      want += i;
      if (i % 10 == 0) kept.push_back(up);
    }
    const cuda::UploadPaths after = cuda::upload_paths(0);
    EXPECT_EQ(after.staged - before.staged, 100);
    EXPECT_EQ(after.on_copy_stream - before.on_copy_stream, side[0] == '1' ? 100 : 0)
        << "(a message above says why the copy stream could not be made)";
    std::vector<double> big(1 << 20);  // 8 MiB: more than a slot
    for (size_t k = 0; k < big.size(); ++k) big[k] = static_cast<double>(k % 977);
    const Tensor tb = Tensor::of(big, {static_cast<int64_t>(big.size())}, DType::F64).to(gpu);
    for (double v : sum.values()) ASSERT_EQ(v, want);
    for (size_t j = 0; j < kept.size(); ++j)
      for (double v : kept[j].values()) ASSERT_EQ(v, static_cast<double>(10 * j));
    EXPECT_EQ(tb.values(), big);
  }
}

// Whole slots, each reused with earlier data still in it: 40 uploads of 4 MiB (a slot's size),
// each different in every element, each read by a kernel at once while the GPU is otherwise
// idle. A copy into place that ran before its transfer had arrived would leave an earlier
// upload's values, or a mix, in some of them.
TEST(CudaUpload, FullSlotsArriveWholeWhenEachIsReadAtOnce) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no GPU present: staged uploads not checked";
  const Device gpu = Device::cuda(0);
  const int64_t n = int64_t{1} << 20;  // 4 MiB of f32
  auto value = [](int i, int64_t k) { return static_cast<double>(i * 4096 + k % 4093); };  // exact in f32
  for (const char* side : {"0", "1"}) {
    SCOPED_TRACE(std::string("SA_COPY_STREAM=") + side);
    ScopedEnv copy_stream("SA_COPY_STREAM", side);
    std::vector<Tensor> doubled;
    for (int i = 0; i < 40; ++i) {
      std::vector<double> v(static_cast<size_t>(n));
      for (int64_t k = 0; k < n; ++k) v[static_cast<size_t>(k)] = value(i, k);
      doubled.push_back(ops::scale(Tensor::of(v, {n}, DType::F32).to(gpu), 2.0));
    }
    for (int i = 0; i < 40; ++i) {
      const std::vector<double> got = doubled[static_cast<size_t>(i)].values();
      for (int64_t k = 0; k < n; ++k)
        ASSERT_EQ(got[static_cast<size_t>(k)], 2 * value(i, k)) << "upload " << i << " element " << k;
    }
  }
}

// The copy stream's hazard: host code frees a block that queued kernels still read, and the next
// upload takes that block. Were the copy stream to write it directly, the new values would land
// before those kernels ran. Slow GEMMs keep the queue long; each reader must still see its own
// values, and each upload arrive whole (both ways; the copy stream is the one at risk).
TEST(CudaUpload, AFreedBlockIsRewrittenOnlyAfterItsQueuedReaders) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no GPU present: the copy stream not checked";
  const Device gpu = Device::cuda(0);
  const int64_t n = 1 << 18;  // 1 MiB of f32
  for (const char* side : {"0", "1"}) {
    SCOPED_TRACE(std::string("SA_COPY_STREAM=") + side);
    ScopedEnv copy_stream("SA_COPY_STREAM", side);
    const Tensor square = Tensor::zeros({4096, 4096}, DType::F32, gpu);
    Tensor busy = square;
    for (int k = 0; k < 12; ++k) busy = ops::matmul(busy, square);  // tens of ms of queued work
    std::vector<Tensor> read, uploaded;
    int reused = 0;
    for (int i = 0; i < 24; ++i) {
      Tensor x = Tensor::of(std::vector<double>(static_cast<size_t>(n), i), {n}, DType::F32).to(gpu);
      const void* block = x.raw();
      read.push_back(ops::add(x, x));  // queued behind the GEMMs: reads x later
      x = Tensor();                    // freed by the host now
      Tensor y = Tensor::of(std::vector<double>(static_cast<size_t>(n), 1000 + i), {n}, DType::F32).to(gpu);
      reused += y.raw() == block;
      uploaded.push_back(y);
    }
    // Without reuse the test would prove nothing: the allocator hands a freed block to the next
    // request of its size.
    ASSERT_GT(reused, 0) << "no upload took a block freed while its reader was queued";
    for (int i = 0; i < 24; ++i) {
      for (double v : read[static_cast<size_t>(i)].values()) ASSERT_EQ(v, 2.0 * i) << "reader " << i;
      for (double v : uploaded[static_cast<size_t>(i)].values()) ASSERT_EQ(v, 1000.0 + i) << "upload " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllOps, CudaVsCpu, ::testing::Range<size_t>(0, op_cases().size()),
                         [](const auto& info) { return op_cases()[info.param].name; });

}  // namespace
}  // namespace sa::testing
