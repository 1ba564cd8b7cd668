// A training step recorded as CUDA graphs (SA_CUDA_GRAPHS=step, StepGraphs in engine/backend.h):
// the step's launches are recorded in pieces, each ended where the host meets the device (a read,
// an upload), since no recording can hold those. The CPU counts the pieces a GPU would start; on
// a GPU the recorded steps give the launched steps' results.
#include <gtest/gtest.h>

#include <random>
#include <stdexcept>

#include "engine/core/device_counters.h"
#include "engine/engine.h"
#include "tests/test_util.h"

namespace sa {
namespace {

// Three pieces: an upload before any launch ends none, the next upload and the read each end one,
// and close() the last.
double three_pieces(Device d, uint64_t kind) {
  StepGraphs step(d, kind);
  const Tensor a = Tensor::of(std::vector<double>{1, 2, 3}, {3}, DType::F32, d);
  const Tensor b = ops::mul(ops::add(a, a), a);  // 2, 8, 18
  const Tensor c = Tensor::of(std::vector<double>{4, 5, 6}, {3}, DType::F32, d);
  const Tensor sum = ops::sum(ops::add(b, c));
  const double read = sum.item();
  ops::scale(sum, 2.0);
  step.close();
  return read;
}

TEST(StepGraphs, PiecesEndWhereTheHostMeetsTheDevice) {
  testing::ScopedEnv graphs("SA_CUDA_GRAPHS", nullptr);
  for (const char* setting : {"step", "1", static_cast<const char*>(nullptr)}) {
    SCOPED_TRACE(setting ? setting : "unset");
    graphs.set(setting);
    const DeviceCounters before = device_counters();
    EXPECT_DOUBLE_EQ(three_pieces(Device::cpu(), 1), 43);
    const DeviceCounters k = device_counters() - before;
    EXPECT_FALSE(counters::in_step());
    EXPECT_EQ(k.uploads, 2);
    EXPECT_EQ(k.host_reads, 1);
    if (setting && std::string(setting) == "step") {
      EXPECT_EQ(k.graphs, 3);
      EXPECT_EQ(k.in_graphs, k.launches) << "every launch in a piece";
    } else {  // chains only, or nothing: the step is launched kernel by kernel
      EXPECT_EQ(k.graphs, 0);
      EXPECT_EQ(k.gpu_launches(), k.launches);
    }
  }
}

// A chain (run_as_graph) inside a recorded step is part of the step's piece: not a graph of its own.
TEST(StepGraphs, AChainInsideAStepBelongsToItsPiece) {
  testing::ScopedEnv graphs("SA_CUDA_GRAPHS", "step");
  const DeviceCounters before = device_counters();
  {
    StepGraphs step(Device::cpu(), 2);
    const Tensor a = Tensor::of(std::vector<double>{1, 2}, {2}, DType::F32, Device::cpu());
    Tensor b;
    run_as_graph(Device::cpu(), 7, [&] { b = ops::mul(ops::add(a, a), a); });
    ops::scale(b, 3.0);
    step.close();
  }
  const DeviceCounters k = device_counters() - before;
  EXPECT_EQ(k.graphs, 1);
  EXPECT_EQ(k.in_graphs, k.launches);
  EXPECT_EQ(k.graph_breaks, 0);
}

// Steps do not nest (an inner one records nothing and its close ends nothing). A step left
// without close() is complete: its last piece is started. An error that leaves a step ends it and
// drops the piece being recorded; the next step is recorded as usual.
TEST(StepGraphs, AnInnerStepChangesNothingAndAnErrorEndsTheStep) {
  testing::ScopedEnv graphs("SA_CUDA_GRAPHS", "step");
  const Tensor a = Tensor::of(std::vector<double>{1, 2}, {2}, DType::F32, Device::cpu());
  {
    StepGraphs outer(Device::cpu(), 3);
    {
      StepGraphs inner(Device::cpu(), 4);
      ops::add(a, a);
      inner.close();
    }
    EXPECT_TRUE(counters::in_step());
    outer.close();
  }
  EXPECT_FALSE(counters::in_step());
  DeviceCounters before = device_counters();
  {
    StepGraphs step(Device::cpu(), 3);
    ops::add(a, a);
  }
  EXPECT_FALSE(counters::in_step());
  EXPECT_EQ((device_counters() - before).graphs, 1) << "left without close(): complete";
  before = device_counters();
  EXPECT_THROW(
      {
        StepGraphs step(Device::cpu(), 3);
        ops::add(a, a);
        throw std::runtime_error("a failed check");
      },
      std::runtime_error);
  EXPECT_FALSE(counters::in_step());
  EXPECT_EQ((device_counters() - before).graphs, 0) << "an error drops the piece being recorded";
  before = device_counters();
  EXPECT_DOUBLE_EQ(three_pieces(Device::cpu(), 3), 43);
  EXPECT_EQ((device_counters() - before).graphs, 3);
}

// On a GPU, a step of GEMMs and elementwise work with uploads, a read, a fresh allocation and the
// cache given back (cudaFree) in the middle. A kind's first step is launched; each later one is
// recorded in pieces, made on the second and updated in place after, and gives the launched
// step's values (the same kernels in the same order; within 1e-6, since cuBLAS promises its bits
// only for one stream and may choose otherwise while recording). Every step has inputs of its
// own, and a tensor kept between steps moves the allocator's blocks, so a piece that kept an
// earlier step's pointers or values would be far off.
TEST(StepGraphs, OnCudaRecordedStepsGiveTheLaunchedResults) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no GPU present";
  const Device gpu = Device::cuda(0);
  testing::ScopedEnv graphs("SA_CUDA_GRAPHS", nullptr);
  std::vector<Tensor> kept;
  auto step = [&](uint64_t seed, double* read) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> g(0, 0.5);
    auto random = [&](Shape s) {
      std::vector<double> v(static_cast<size_t>(numel(s)));
      for (double& e : v) e = g(rng);
      return Tensor::of(v, s, DType::F32, gpu);
    };
    StepGraphs recorded(gpu, 77);
    const Tensor w = random({96, 64}), x = random({32, 96});
    Tensor h = ops::tanh(ops::matmul(x, w));
    const Tensor bias = random({64});
    h = ops::add(h, bias);
    *read = ops::sum(h).item();
    kept.push_back(Tensor::zeros({4096 + 131 * static_cast<int64_t>(kept.size())}, DType::F32, gpu));  // a fresh block
    h = ops::mul(h, ops::sigmoid(h));
    backend_uncounted(gpu).allocator().release_cached();  // cudaFree: the host meets the device
    h = ops::matmul(h, ops::transpose(w, 0, 1));
    recorded.close();
    return h.values();
  };
  double read = 0;
  graphs.set("step");
  step(1, &read);  // the kind's first step: launched
  for (uint64_t seed = 2; seed < 6; ++seed) {
    graphs.set(nullptr);
    double launched_read = 0;
    const std::vector<double> launched = step(seed, &launched_read);
    graphs.set("step");
    const DeviceCounters before = device_counters();
    const std::vector<double> recorded = step(seed, &read);
    const DeviceCounters k = device_counters() - before;
    EXPECT_GE(k.graphs, 3) << "step " << seed << ": recorded in pieces (see any message above)";
    EXPECT_LT(k.gpu_launches(), k.launches) << k.launches << " launches, " << k.in_graphs << " in pieces";
    EXPECT_NEAR(read, launched_read, 1e-6 * std::abs(launched_read) + 1e-6);
    ASSERT_EQ(recorded.size(), launched.size());
    for (size_t i = 0; i < recorded.size(); ++i)
      ASSERT_NEAR(recorded[i], launched[i], 1e-6 * std::abs(launched[i]) + 1e-6) << "element " << i;
  }
}

}  // namespace
}  // namespace sa
