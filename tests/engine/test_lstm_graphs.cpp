// The LSTM's step loops as CUDA graphs (SA_CUDA_GRAPHS=1, Backend::run_as_graph): each sequence's
// forward and backward is one recorded chain that never reads from or uploads to the device (else
// it could not be recorded), and on a GPU the recorded chains give the launched chains' results:
// a chain's first run is launched, its second makes the graph, later runs update it in place.
#include <gtest/gtest.h>

#include <random>

#include "engine/core/device_counters.h"
#include "engine/engine.h"
#include "tests/engine/lstm_two_directions.h"
#include "tests/test_util.h"

namespace sa {
namespace {

using testing::Outcome;
using testing::two_directions;

// A packed sequence (rows ending at different steps: the loop copies their final states as they
// end) forward and backward; its outputs and gradients.
std::vector<std::vector<double>> packed_sequence(Device dev, uint64_t seed = 5) {
  const std::vector<int64_t> steps = {4, 4, 3, 1, 1};
  const int64_t N = 13, in = 5, D = 6, P = 4;
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> g(0, 0.6);
  auto random = [&](Shape s) {
    std::vector<double> v(static_cast<size_t>(numel(s)));
    for (double& e : v) e = g(rng);
    return Tensor::of(v, s, DType::F32, dev).set_requires_grad();
  };
  ops::LstmSequenceArgs a{random({N, in}), random({in + P, 4 * D}), random({4 * D}), random({D, P}),
                          random({4, D}),  random({4, P}),          0.8,             0.7,
                          ops::LstmPath::Steps, steps};
  const auto out = ops::lstm_sequences({a})[0];
  Tensor loss = Tensor::zeros({}, DType::F32, dev);
  for (const Tensor& o : out) loss = ops::add(loss, ops::sum(ops::mul(o, random(o.shape()).detach())));
  backward(loss);
  std::vector<std::vector<double>> r;
  for (const Tensor& o : out) r.push_back(o.values());
  for (const Tensor& t : {a.x, a.W, a.bias, a.W_P, a.c0, a.m0}) r.push_back(t.grad().values());
  return r;
}

// The CPU runs each chain as it would launch it and counts what a GPU would record: one graph per
// sequence forward and one backward, holding the step loops' launches, none of them a read or
// an upload (a GPU could not record those).
TEST(LstmGraphs, EachSequenceIsOneGraphThatNeitherReadsNorUploads) {
  testing::ScopedEnv graphs("SA_CUDA_GRAPHS", "1");
  for (bool bf16 : {false, true}) {
    const DeviceCounters before = device_counters();
    const Outcome on = two_directions(ops::LstmPath::Steps, bf16, DType::F32);
    const DeviceCounters k = device_counters() - before;
    EXPECT_EQ(k.graphs, 4) << "two sequences, forward and backward";
    EXPECT_EQ(k.graph_breaks, 0);
    EXPECT_GE(k.in_graphs, 2 * 2 * 7 * 4) << "at least 4 launches a step, 7 steps, both passes";
    graphs.set(nullptr);
    const DeviceCounters off_before = device_counters();
    const Outcome off = two_directions(ops::LstmPath::Steps, bf16, DType::F32);
    EXPECT_EQ((device_counters() - off_before).graphs, 0) << "off: nothing counted as a graph";
    EXPECT_EQ(on.values, off.values) << "the CPU runs the same primitives either way";
    EXPECT_EQ(on.launches, off.launches);
    graphs.set("1");
  }
  const DeviceCounters before = device_counters();
  packed_sequence(Device::cpu());
  const DeviceCounters k = device_counters() - before;
  EXPECT_EQ(k.graphs, 2);
  EXPECT_EQ(k.graph_breaks, 0);
}

// What a chain reads back breaks the graph: counted, and as launched one by one, so a budget test
// catches it.
TEST(LstmGraphs, AChainThatReadsIsCountedAsABreak) {
  testing::ScopedEnv graphs("SA_CUDA_GRAPHS", "1");
  const Tensor x = Tensor::full({4}, 0.5);
  const DeviceCounters before = device_counters();
  double read = 0;
  run_as_graph(Device::cpu(), 7, [&] { read = ops::sum(x).item(); });
  const DeviceCounters k = device_counters() - before;
  EXPECT_DOUBLE_EQ(read, 2);
  EXPECT_EQ(k.graph_breaks, 1);
  EXPECT_EQ(k.graphs, 0) << "a GPU launches it kernel by kernel";
  EXPECT_EQ(k.gpu_launches(), k.launches);
}

// On a GPU: recorded chains give the launched chains' results (the same kernels in the same
// order; within 1e-6, as for the lanes in test_lstm_stack.cpp, since cuBLAS promises its bits
// only for one stream and may choose otherwise while recording), on one stream and on lanes, f32
// and bf16, unpacked and packed. A key's first run is launched; each later run records, and its
// graph (made on the second run, updated in place after) is one launch per sequence and pass.
// Every run has inputs of its own, and a tensor kept alive between runs moves the allocator's
// blocks, so a graph that kept an earlier run's pointers or values would be far off.
TEST(LstmGraphs, OnCudaRecordedChainsEqualLaunchedOnes) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no GPU present";
  const Device gpu = Device::cuda(0);
  testing::ScopedEnv graphs("SA_CUDA_GRAPHS", nullptr), streams("SA_LSTM_STREAMS", nullptr);
  std::vector<Tensor> kept;
  uint64_t seed = 100;
  for (bool bf16 : {false, true})
    for (const char* lanes : {static_cast<const char*>(nullptr), "1"}) {
      streams.set(lanes);
      graphs.set("1");
      two_directions(ops::LstmPath::Steps, bf16, DType::F32, gpu, seed++);  // each chain's first run: launched
      for (int run = 0; run < 3; ++run) {  // made, then updated in place
        graphs.set(nullptr);
        const Outcome launched = two_directions(ops::LstmPath::Steps, bf16, DType::F32, gpu, seed);
        kept.push_back(Tensor::zeros({1000 + 37 * static_cast<int64_t>(kept.size())}, DType::F32, gpu));
        graphs.set("1");
        const DeviceCounters before = device_counters();
        const Outcome recorded = two_directions(ops::LstmPath::Steps, bf16, DType::F32, gpu, seed++);
        const DeviceCounters k = device_counters() - before;
        EXPECT_EQ(k.graphs, 4) << "bf16 " << bf16 << ", streams " << (lanes ? 1 : 0) << ", run " << run
                               << ": a chain was launched kernel by kernel (see the message above)";
        testing::expect_outputs_near(recorded.values, launched.values, 1e-6);
        EXPECT_EQ(recorded.launches, launched.launches);
      }
    }
  streams.set(nullptr);
  graphs.set("1");
  packed_sequence(gpu, 1);  // the first run of its keys
  for (uint64_t s = 2; s < 4; ++s) {
    graphs.set(nullptr);
    const auto launched = packed_sequence(gpu, s);
    graphs.set("1");
    const DeviceCounters before = device_counters();
    testing::expect_outputs_near(packed_sequence(gpu, s), launched, 1e-6);
    EXPECT_EQ((device_counters() - before).graphs, 2);
  }
  testing::expect_outputs_near(packed_sequence(gpu, 5), packed_sequence(Device::cpu(), 5), 1e-4);
}

}  // namespace
}  // namespace sa
