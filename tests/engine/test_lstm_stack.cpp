// Stacked LSTM sequences (ops::LstmPath::Stacked, what CUDA runs for a biLM layer's two
// directions): the same outputs and gradients as stepping each sequence on its own, in f32 and
// under bf16, with half the launches per step. The f64 gradient check and the CUDA comparison
// run the op case lstm_sequences_stacked.
#include <gtest/gtest.h>

#include <optional>
#include <random>

#include "engine/core/device_counters.h"
#include "engine/engine.h"
#include "tests/engine/lstm_two_directions.h"
#include "tests/test_util.h"

namespace sa {
namespace {

using testing::Outcome;
using testing::two_directions;

TEST(LstmStack, StackedDirectionsEqualSteppingEachOnItsOwn) {
  for (DType dt : {DType::F64, DType::F32}) {
    const Outcome stacked = two_directions(ops::LstmPath::Stacked, false, dt),
              separate = two_directions(ops::LstmPath::Steps, false, dt);
    testing::expect_outputs_near(stacked.values, separate.values, dt == DType::F64 ? 1e-12 : 1e-5);
    // Per step: a batched recurrent GEMM, a cell, a batched projection and a clip for both (8
    // launches separately); the backward likewise. 7 steps: at least 7 * 4 fewer forward ones.
    EXPECT_LT(stacked.launches + 7 * 4, separate.launches) << stacked.launches << " vs " << separate.launches;
  }
}

// The same per step on the CPU's counts (launches: GEMMs too): a stacked step starts 4 primitives
// forward and 4 backward for both directions, stepping each starts 8 and 8. The difference between
// two lengths is 8 per added step, whatever the stack's gathering and copying costs once per call.
TEST(LstmStack, StackingHalvesThePerStepLaunches) {
  auto saving = [](int64_t T) {
    return two_directions(ops::LstmPath::Steps, false, DType::F32, Device::cpu(), 12, T).launches -
           two_directions(ops::LstmPath::Stacked, false, DType::F32, Device::cpu(), 12, T).launches;
  };
  EXPECT_EQ(saving(14) - saving(7), 8 * 7);
}

TEST(LstmStack, UnderBf16TheStackRoundsWhereEachSequenceDoes) {
  const Outcome stacked = two_directions(ops::LstmPath::Stacked, true, DType::F32),
            separate = two_directions(ops::LstmPath::Steps, true, DType::F32),
            f32 = two_directions(ops::LstmPath::Steps, false, DType::F32);
  testing::expect_outputs_near(stacked.values, separate.values, 1e-5);
  double off = 0;
  for (size_t i = 0; i < f32.values[0].size(); ++i) off = std::max(off, std::abs(f32.values[0][i] - stacked.values[0][i]));
  EXPECT_GT(off, 1e-5) << "bf16 should change the outputs";
}

// On CUDA: the same values as the CPU's stacked run, and half of our per-step kernels: the
// stacked step runs one cell and one output kernel for both directions in the forward, and one
// output-gradient and one cell-gradient kernel in the backward, where stepping each direction runs
// two of each: 4 fewer kernels a step. What the stack costs once per call is not per step: it
// gathers the members' c0, m0, W_h, W_P and bias (a copy kernel per member each) and their
// output gradients and final-state gradients, and copies each member's outputs, h and gradients
// back out (24 kernels for two members, against 3 that stepping spends on its own), so at T = 7
// the saving is 28 - 21 = 7 (96 against 103 on an H100). The test measures the per-step saving
// from two lengths, where the per-call kernels cancel.
TEST(LstmStack, OnCudaStackingMatchesTheCpuWithFewerKernels) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no GPU present";
  const Outcome gpu = two_directions(ops::LstmPath::Stacked, false, DType::F32, Device::cuda(0)),
                steps = two_directions(ops::LstmPath::Steps, false, DType::F32, Device::cuda(0)),
                cpu = two_directions(ops::LstmPath::Stacked, false, DType::F32);
  testing::expect_outputs_near(gpu.values, cpu.values, 1e-4);
  EXPECT_LT(gpu.kernels, steps.kernels) << gpu.kernels << " vs " << steps.kernels;
  const Outcome gpu14 = two_directions(ops::LstmPath::Stacked, false, DType::F32, Device::cuda(0), 12, 14),
                steps14 = two_directions(ops::LstmPath::Steps, false, DType::F32, Device::cuda(0), 12, 14);
  EXPECT_EQ((steps14.kernels - gpu14.kernels) - (steps.kernels - gpu.kernels), 4 * 7)
      << "T=7: " << gpu.kernels << " vs " << steps.kernels << "; T=14: " << gpu14.kernels << " vs " << steps14.kernels;
}

// On CUDA with SA_LSTM_STREAMS=1 the two directions step side by side, each on a stream of its
// own (two lanes forked in the forward and two in the backward): the same kernels in the same
// order per sequence, so the same values as one stream (1e-6: cuBLAS promises the same bits only
// while one stream runs; a race would be far off), forward and gradients, and the same launches.
TEST(LstmStack, OnCudaSequencesOnTheirOwnStreamsMatchOneStream) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no GPU present";
  testing::ScopedEnv streams("SA_LSTM_STREAMS", nullptr);
  const DeviceCounters before = device_counters();
  const Outcome one = two_directions(ops::LstmPath::Steps, false, DType::F32, Device::cuda(0));
  EXPECT_EQ((device_counters() - before).lanes, 0);
  streams.set("1");
  const DeviceCounters between = device_counters();
  const Outcome two = two_directions(ops::LstmPath::Steps, false, DType::F32, Device::cuda(0));
  EXPECT_EQ((device_counters() - between).lanes, 4);
  const Outcome cpu = two_directions(ops::LstmPath::Steps, false, DType::F32);
  testing::expect_outputs_near(two.values, one.values, 1e-6);
  testing::expect_outputs_near(two.values, cpu.values, 1e-4);
  EXPECT_EQ(one.launches, two.launches);
}

// Sequences of different shapes, or packed ones, are never stacked: each steps on its own.
TEST(LstmStack, OnlySequencesOfOneShapeStack) {
  Tensor a = Tensor::full({3, 2, 4}, 0.1), b = Tensor::full({3, 1, 4}, 0.1);
  Tensor W = Tensor::full({4 + 2, 8}, 0.05), bias = Tensor::zeros({8}), WP = Tensor::full({2, 2}, 0.3);
  auto o = ops::lstm_sequences({{a, W, bias, WP, Tensor::zeros({2, 2}), Tensor::zeros({2, 2}), 0, 0, ops::LstmPath::Stacked},
                                {b, W, bias, WP, Tensor::zeros({1, 2}), Tensor::zeros({1, 2}), 0, 0, ops::LstmPath::Stacked}});
  auto one = ops::lstm_sequences({{b, W, bias, WP, Tensor::zeros({1, 2}), Tensor::zeros({1, 2}), 0, 0, ops::LstmPath::Steps}});
  EXPECT_EQ(o[1][0].values(), one[0][0].values());
  EXPECT_EQ(o[0][0].shape(), (Shape{3, 2, 2}));
}

}  // namespace
}  // namespace sa
