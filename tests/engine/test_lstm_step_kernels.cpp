// The LSTM's fused step kernels (backend lstm_output, lstm_output_backward and the cell's optional
// outputs): each equals the chain of primitives it replaces, bit for bit on the CPU, writes the
// bf16 copy a cast would, and on CUDA matches the CPU. The whole-sequence op's gradient check and
// CUDA comparison run the op cases lstm_sequence*; this file holds the pieces to the old chain.
#include <gtest/gtest.h>

#include <random>

#include "engine/core/device_counters.h"
#include "engine/engine.h"
#include "tests/test_util.h"

namespace sa {
namespace {

Tensor random_tensor(std::mt19937_64& rng, Shape s, DType dt, Device dev = Device::cpu(), double scale = 1.0) {
  std::normal_distribution<double> g(0, scale);
  std::vector<double> v(static_cast<size_t>(numel(s)));
  for (double& e : v) e = g(rng);
  return Tensor::of(v, s, dt, dev);
}

std::vector<double> bf16_values(const Tensor& b) { return b.to(DType::F32).values(); }

// gm = (grec + gy) * clip'(m): what the backward ran as a copy, an axpy and the clip's backward.
TEST(LstmStepKernels, OutputBackwardEqualsTheUnfusedChain) {
  std::mt19937_64 rng(4);
  Backend& be = backend(Device::cpu());
  for (DType dt : {DType::F64, DType::F32})
    for (double clip : {0.0, 0.7})
      for (bool with_gy : {false, true}) {
        SCOPED_TRACE(::testing::Message() << (dt == DType::F64 ? "f64" : "f32") << " clip " << clip << " gy " << with_gy);
        const Tensor m = random_tensor(rng, {5, 6}, dt), grec = random_tensor(rng, {5, 6}, dt),
                     gy = random_tensor(rng, {5, 6}, dt);
        Tensor dm = grec.clone(), want = Tensor::empty({5, 6}, dt);
        if (with_gy) be.axpy(1.0, gy, dm);
        if (clip > 0)
          be.unary_backward(UnaryOp::Clip, m, m, dm, want, -clip, clip, false);
        else
          want.copy_from(dm);
        Tensor got = Tensor::empty({5, 6}, dt);
        Tensor copy = dt == DType::F32 ? Tensor::empty({5, 6}, DType::BF16) : Tensor();
        be.lstm_output_backward(m, with_gy ? &gy : nullptr, grec, clip, got, copy.defined() ? &copy : nullptr);
        EXPECT_EQ(got.values(), want.values());
        if (copy.defined()) {
          EXPECT_EQ(bf16_values(copy), bf16_values(got.to(DType::BF16)));
        }
      }
}

// y = clip(m) (in place when there is no clip) and its bf16 copy.
TEST(LstmStepKernels, OutputClipsAndWritesTheCastsCopy) {
  std::mt19937_64 rng(5);
  Backend& be = backend(Device::cpu());
  const Tensor m = random_tensor(rng, {4, 8}, DType::F32);
  Tensor y = Tensor::empty({4, 8}, DType::F32), want = Tensor::empty({4, 8}, DType::F32);
  Tensor copy = Tensor::empty({4, 8}, DType::BF16);
  be.unary(UnaryOp::Clip, m, want, -0.5, 0.5);
  be.lstm_output(m, 0.5, y, &copy);
  EXPECT_EQ(y.values(), want.values());
  EXPECT_EQ(bf16_values(copy), bf16_values(want.to(DType::BF16)));
  Tensor same = m.clone();
  be.lstm_output(same, 0.0, same, &copy);  // no clip: y is m, only the copy is written
  EXPECT_EQ(same.values(), m.values());
  EXPECT_EQ(bf16_values(copy), bf16_values(m.to(DType::BF16)));
  Tensor wrong = Tensor::empty({4, 7}, DType::BF16);
  EXPECT_THROW(be.lstm_output(m, 0.5, y, &wrong), Error);
}

// The cell's backward may write d c_prev over its d c input; its forward and backward copies are
// the casts of h and of the gates' gradient.
TEST(LstmStepKernels, CellWritesCopiesAndMayOverwriteItsCellGradient) {
  std::mt19937_64 rng(6);
  Backend& be = backend(Device::cpu());
  const int64_t N = 3, H = 5;
  const Tensor gates = random_tensor(rng, {N, 4 * H}, DType::F32), c_prev = random_tensor(rng, {N, H}, DType::F32);
  Tensor c = Tensor::empty({N, H}, DType::F32), h = Tensor::empty({N, H}, DType::F32);
  Tensor h_copy = Tensor::empty({N, H}, DType::BF16);
  be.lstm_cell(gates, c_prev, 1.0, 0.9, c, h, &h_copy);
  EXPECT_EQ(bf16_values(h_copy), bf16_values(h.to(DType::BF16)));
  const Tensor gc = random_tensor(rng, {N, H}, DType::F32), gh = random_tensor(rng, {N, H}, DType::F32);
  Tensor gg = Tensor::empty({N, 4 * H}, DType::F32), gcp = Tensor::empty({N, H}, DType::F32);
  be.lstm_cell_backward(gates, c_prev, c, 1.0, 0.9, &gc, &gh, gg, &gcp);
  Tensor in_place = gc.clone(), gg2 = Tensor::empty({N, 4 * H}, DType::F32);
  Tensor gg_copy = Tensor::empty({N, 4 * H}, DType::BF16);
  be.lstm_cell_backward(gates, c_prev, c, 1.0, 0.9, &in_place, &gh, gg2, &in_place, &gg_copy);
  EXPECT_EQ(in_place.values(), gcp.values());
  EXPECT_EQ(gg2.values(), gg.values());
  EXPECT_EQ(bf16_values(gg_copy), bf16_values(gg.to(DType::BF16)));
}

// A whole sequence's backward steps: the output's gradient and the cell's in one kernel each, and
// the two GEMMs; under bf16 the kernels write the GEMMs' operands, so bf16 adds no launch per step.
TEST(LstmStepKernels, ASequenceLaunchesFourPrimitivesPerStepEitherWay) {
  const int64_t T = 9, B = 2, in = 3, D = 4, P = 3;
  auto launches = [&](bool bf16, int64_t steps) {
    std::mt19937_64 rng(7);
    set_bf16_matmuls(bf16);
    auto param = [&](Shape s) { return random_tensor(rng, s, DType::F32, Device::cpu(), 0.5).set_requires_grad(); };
    const Tensor x = param({steps, B, in}), W = param({in + P, 4 * D}), bias = param({4 * D}), WP = param({D, P});
    const DeviceCounters before = device_counters();
    auto out = ops::lstm_sequence(x, W, bias, WP, Tensor::zeros({B, D}), Tensor::zeros({B, P}), 0.9, 0.8);
    backward(ops::sum(out[0]));
    set_bf16_matmuls(false);
    return (device_counters() - before).launches;
  };
  // The cost of one more step: forward (recurrent GEMM, cell, projection, clip) and backward
  // (output gradient, projection's GEMM, cell, recurrent GEMM).
  EXPECT_EQ(launches(false, T + 1) - launches(false, T), 8);
  EXPECT_EQ(launches(true, T + 1) - launches(true, T), 8);
}

// Under bf16 an unpacked sequence keeps h and m_{t-1} only as the bf16 operands of its weight
// gradients: the tensors it holds from the forward to the backward shrink by about N * D * 2 bytes
// (h's f32 rows, 4 bytes, become 2), and the gradients are unchanged (the step-composition and
// stacking tests check their values under bf16).
TEST(LstmStepKernels, UnderBf16ASequenceSavesItsGemmOperandsInBf16) {
  const int64_t T = 25, B = 16, in = 8, D = 256, P = 16, N = T * B;
  auto held = [&](bool bf16) {
    std::mt19937_64 rng(3);
    set_bf16_matmuls(bf16);
    auto param = [&](Shape s) { return random_tensor(rng, s, DType::F32, Device::cpu(), 0.3).set_requires_grad(); };
    const Tensor x = param({T, B, in}), W = param({in + P, 4 * D}), bias = param({4 * D}), WP = param({D, P});
    const Tensor c0 = Tensor::zeros({B, D}), m0 = Tensor::zeros({B, P});
    host_allocator().release_cached();  // a cached block larger than asked would count whole
    const size_t before = host_allocator().stats().in_use;
    auto out = ops::lstm_sequence(x, W, bias, WP, c0, m0, 0.9, 0.8);
    const size_t after = host_allocator().stats().in_use;
    backward(ops::sum(out[0]));
    set_bf16_matmuls(false);
    return static_cast<int64_t>(after - before);
  };
  const int64_t f32 = held(false), bf16 = held(true);
  // f32 saves H [N, D] f32; bf16 saves H_op [N, D] and M_op [N, P] in bf16, one step's h scratch
  // [B, D] f32, and its rounded weights (W_x, W_h, W_P); 64 KiB for the allocator's rounding.
  const int64_t weights = ((in + P) * 4 * D + D * P) * 2;
  EXPECT_LE(bf16, f32 - N * D * 2 + N * P * 2 + B * D * 4 + weights + (64 << 10)) << bf16 << " vs " << f32;
  EXPECT_LT(bf16, f32 - N * D) << bf16 << " vs " << f32;
}

// A backward that runs after the bf16 setting was turned off still multiplies the operands the
// forward saved in bf16 (their partners rounded to match), packed or not.
TEST(LstmStepKernels, ABackwardAfterTheBf16SettingEndsStillRuns) {
  for (bool packed : {false, true}) {
    SCOPED_TRACE(packed);
    auto grads = [&](bool bf16_backward) {
      std::mt19937_64 rng(4);
      auto param = [&](Shape s) { return random_tensor(rng, s, DType::F32, Device::cpu(), 0.4).set_requires_grad(); };
      const int64_t T = 5, B = 3, in = 4, D = 6, P = 3;
      const Tensor W = param({in + P, 4 * D}), bias = param({4 * D}), WP = param({D, P});
      const Tensor x = packed ? param({7, in}) : param({T, B, in});
      set_bf16_matmuls(true);
      ops::LstmSequenceArgs a{x, W, bias, WP, Tensor::zeros({B, D}), Tensor::zeros({B, P}), 0.9, 0.8};
      if (packed) a.steps = {3, 2, 1, 1};
      auto out = ops::lstm_sequences({a});
      set_bf16_matmuls(bf16_backward);
      backward(ops::sum(ops::mul(out[0][0], out[0][0])));
      set_bf16_matmuls(false);
      return std::vector<std::vector<double>>{x.grad().values(), W.grad().values(), WP.grad().values()};
    };
    const auto off = grads(false), on = grads(true);
    for (size_t k = 0; k < on.size(); ++k)
      for (size_t i = 0; i < on[k].size(); ++i) EXPECT_NEAR(off[k][i], on[k][i], 2e-2 * (1 + std::abs(on[k][i])));
  }
}

TEST(LstmStepKernels, OnCudaTheyMatchTheCpu) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no GPU present";
  std::mt19937_64 rng(8);
  const int64_t N = 33, H = 40;
  Backend& cpu = backend(Device::cpu());
  Backend& gpu = backend(Device::cuda(0));
  const Tensor gates = random_tensor(rng, {N, 4 * H}, DType::F32), c_prev = random_tensor(rng, {N, H}, DType::F32);
  const Tensor gc = random_tensor(rng, {N, H}, DType::F32), gh = random_tensor(rng, {N, H}, DType::F32);
  const Tensor gy = random_tensor(rng, {N, H}, DType::F32);
  auto run = [&](Backend& be, Device d) {
    const Tensor g = gates.to(d), cp = c_prev.to(d), dc = gc.to(d), dh = gh.to(d), dy = gy.to(d);
    Tensor c = Tensor::empty({N, H}, DType::F32, d), h = Tensor::empty({N, H}, DType::F32, d), hb = Tensor::empty({N, H}, DType::BF16, d);
    be.lstm_cell(g, cp, 1.0, 0.9, c, h, &hb);
    Tensor y = Tensor::empty({N, H}, DType::F32, d), yb = Tensor::empty({N, H}, DType::BF16, d);
    be.lstm_output(h, 0.3, y, &yb);
    Tensor gm = Tensor::empty({N, H}, DType::F32, d), gmb = Tensor::empty({N, H}, DType::BF16, d);
    be.lstm_output_backward(h, &dy, dh, 0.3, gm, &gmb);
    Tensor in_place = dc.clone(), gg = Tensor::empty({N, 4 * H}, DType::F32, d);
    Tensor ggb = Tensor::empty({N, 4 * H}, DType::BF16, d);
    be.lstm_cell_backward(g, cp, c, 1.0, 0.9, &in_place, &dh, gg, &in_place, &ggb);
    // On each device the copies are the casts of what it computed, bit for bit.
    EXPECT_EQ(bf16_values(hb), bf16_values(h.to(DType::BF16)));
    EXPECT_EQ(bf16_values(yb), bf16_values(y.to(DType::BF16)));
    EXPECT_EQ(bf16_values(gmb), bf16_values(gm.to(DType::BF16)));
    EXPECT_EQ(bf16_values(ggb), bf16_values(gg.to(DType::BF16)));
    return std::vector<std::vector<double>>{c.values(), h.values(), y.values(), gm.values(), in_place.values(),
                                            gg.values()};
  };
  // The CUDA and CPU transcendental functions differ in their last bits.
  testing::expect_outputs_near(run(gpu, Device::cuda(0)), run(cpu, Device::cpu()), 1e-5);
}

}  // namespace
}  // namespace sa
