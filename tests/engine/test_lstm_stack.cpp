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

TEST(LstmStack, UnderBf16TheStackRoundsWhereEachSequenceDoes) {
  const Outcome stacked = two_directions(ops::LstmPath::Stacked, true, DType::F32),
            separate = two_directions(ops::LstmPath::Steps, true, DType::F32),
            f32 = two_directions(ops::LstmPath::Steps, false, DType::F32);
  testing::expect_outputs_near(stacked.values, separate.values, 1e-5);
  double off = 0;
  for (size_t i = 0; i < f32.values[0].size(); ++i) off = std::max(off, std::abs(f32.values[0][i] - stacked.values[0][i]));
  EXPECT_GT(off, 1e-5) << "bf16 should change the outputs";
}

// On CUDA: the same values as the CPU's stacked run, and at least 2 fewer of our kernels per
// forward step than stepping each direction (one cell and one output kernel for both, not two
// each). The backward's per-step kernels (the output's gradient and the cell's) are stacked too
// since they became one kernel each; before that its count was the same either way (103 against
// 117 on an H200, all in the forward).
TEST(LstmStack, OnCudaStackingMatchesTheCpuWithFewerKernels) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no GPU present";
  const Outcome gpu = two_directions(ops::LstmPath::Stacked, false, DType::F32, Device::cuda(0)),
                steps = two_directions(ops::LstmPath::Steps, false, DType::F32, Device::cuda(0)),
                cpu = two_directions(ops::LstmPath::Stacked, false, DType::F32);
  testing::expect_outputs_near(gpu.values, cpu.values, 1e-4);
  EXPECT_LE(gpu.kernels + 7 * 2, steps.kernels) << gpu.kernels << " vs " << steps.kernels;
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
