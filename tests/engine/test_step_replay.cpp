// A step captured once and replayed (engine/step_replay.h), on the CPU: a replay on new inputs
// gives what launching the same work again gives, dropout included, and what a replay cannot hold
// refuses the capture.
#include <gtest/gtest.h>

#include "engine/engine.h"
#include "engine/step_replay.h"
#include "tests/test_util.h"

namespace sa {
namespace {

// A little work on one input: products, a host copy, a dropout mask, a sum.
Tensor work(const Tensor& x, Generator& gen) {
  Tensor y = ops::mul(x, x).clone();
  return ops::sum(ops::add(ops::dropout(y, 0.5, gen), x));
}

TEST(StepReplay, AReplayOnNewInputsGivesTheLaunchedResult) {
  const std::vector<float> first = {1, 2, 3, 4}, second = {-2, 0.5f, 7, 1};
  Generator launched_gen(11);
  const double launched_first = work(Tensor::from(first, {4}), launched_gen).item();
  const double launched_second = work(Tensor::from(second, {4}), launched_gen).item();

  Generator gen(11);
  StepReplay r;
  r.begin(&gen);
  const Tensor out = work(Tensor::from(first, {4}), gen);
  r.end();
  ASSERT_TRUE(r.usable()) << r.why_not();
  ASSERT_EQ(r.input_count(), 1u);
  EXPECT_EQ(r.check_inputs({bytes_of(first)}), "");
  EXPECT_TRUE(testing::contains(r.check_inputs({bytes_of(second)}), "other values"));
  EXPECT_EQ(out.item(), launched_first);
  const DeviceCounters before = device_counters();
  ASSERT_TRUE(r.replay({bytes_of(second)}));
  const DeviceCounters k = device_counters() - before;
  EXPECT_EQ(out.item(), launched_second);  // the dropout mask of the second draw, not the first's
  EXPECT_EQ(gen.offset, launched_gen.offset);
  EXPECT_EQ(k.uploads, 1);
  EXPECT_EQ(k.gpu_launches(), 1);  // what a GPU starts: the captured graph
  EXPECT_EQ(static_cast<size_t>(k.launches), r.kept());
  // Inputs of another size run nothing.
  const std::vector<float> longer = {1, 2, 3, 4, 5};
  EXPECT_FALSE(r.replay({bytes_of(longer)}));
  EXPECT_EQ(r.replays(), 1);
}

// Work captured side by side (as the CPU's LSTM sequences run) replays side by side, between the
// work before and after it: the region reads what came before and what follows reads the region.
Tensor side_by_side(const Tensor& x, StepReplay* r) {
  const Tensor base = ops::scale(x, 2.0);
  Tensor out[2];
  if (r) r->parallel_begin();
#pragma omp parallel for num_threads(2) schedule(static, 1)
  for (int i = 0; i < 2; ++i) {
    const StepReplay::Lane lane(i);
    Tensor t = base;
    for (int k = 0; k < 20; ++k) t = ops::add(ops::mul(t, base), Tensor::full({4}, 0.25 * (i + 1), DType::F32));
    out[i] = t;
  }
  if (r) r->parallel_end();
  return ops::sum(ops::sub(out[0], out[1]));
}

TEST(StepReplay, WorkCapturedSideBySideReplaysInItsPlace) {
  const std::vector<float> first = {0.1f, -0.2f, 0.3f, 0.05f}, second = {-0.3f, 0.25f, 0.1f, 0.2f};
  const double launched = side_by_side(Tensor::from(second, {4}), nullptr).item();
  StepReplay r;
  r.begin(nullptr);
  const Tensor out = side_by_side(Tensor::from(first, {4}), &r);
  r.end();
  ASSERT_TRUE(r.usable()) << r.why_not();
  ASSERT_TRUE(r.replay({bytes_of(second)}));
  EXPECT_EQ(out.item(), launched);
}

// The captured step's tensors come from a pool of its own, where a block the step frees is taken
// again inside the step: ten 1 MiB temporaries in turn hold about two blocks, not ten, and the
// replay, naming the same blocks in the same order, still computes the step.
TEST(StepReplay, TheStepReusesTheBlocksItFreesInItsPool) {
  auto chain = [](const Tensor& x) {
    Tensor t = x;
    for (int k = 0; k < 10; ++k) t = ops::add(ops::scale(t, 0.5), x);  // each step frees the one before
    return ops::sum(t);
  };
  const std::vector<float> first(1 << 18, 1.0f), second(1 << 18, 3.0f);
  const double launched = chain(Tensor::from(second, {1 << 18})).item();
  StepReplay r;
  r.begin(nullptr);
  const Tensor out = chain(Tensor::from(first, {1 << 18}));
  r.end();
  ASSERT_TRUE(r.usable()) << r.why_not();
  EXPECT_LE(r.pool_bytes(), size_t{6} << 20);  // input, two scaled and summed temporaries at a time, the sum
  EXPECT_GE(r.pool_bytes(), size_t{2} << 20);
  ASSERT_TRUE(r.replay({bytes_of(second)}));
  EXPECT_EQ(out.item(), launched);
}

// An input made after the step freed a temporary may take the temporary's block: a replay copies
// it in where the step made it, after the temporary's work, not before the step.
double input_after_temporaries(const std::vector<float>& v) {
  const int64_t n = static_cast<int64_t>(v.size());
  Tensor early;
  {
    const Tensor a = Tensor::full({n}, 2.0), b = ops::scale(a, 3.0);
    early = ops::sum(b);  // a and b are freed here
  }
  return ops::add(ops::sum(Tensor::from(v, {n})), early).item();
}

TEST(StepReplay, AnInputIsCopiedInWhereTheStepMadeIt) {
  const std::vector<float> first(4096, 1.0f), second(4096, 5.0f);
  StepReplay r;
  r.begin(nullptr);
  const int64_t n = 4096;
  Tensor early;
  {
    const Tensor a = Tensor::full({n}, 2.0), b = ops::scale(a, 3.0);
    early = ops::sum(b);
  }
  const Tensor out = ops::add(ops::sum(Tensor::from(first, {n})), early);
  r.end();
  ASSERT_TRUE(r.usable()) << r.why_not();
  ASSERT_TRUE(r.replay({bytes_of(second)}));
  EXPECT_EQ(out.item(), input_after_temporaries(second));
}

TEST(StepReplay, WhatAReplayCannotHoldRefusesTheCapture) {
  {
    StepReplay r;
    r.begin(nullptr);
    const Tensor x = Tensor::from(std::vector<float>{1, 2}, {2});
    EXPECT_EQ(ops::sum(x).item(), 3.0);  // a host read decides nothing a replay could redo
    r.end();
    EXPECT_FALSE(r.usable());
    EXPECT_TRUE(testing::contains(r.why_not(), "read device values")) << r.why_not();
    const std::vector<float> v = {1, 2};
    EXPECT_FALSE(r.replay({bytes_of(v)}));
  }
  {
    Generator captured(1), other(2);
    StepReplay r;
    r.begin(&captured);
    ops::dropout(Tensor::from(std::vector<float>{1, 2}, {2}), 0.5, other);
    r.end();
    EXPECT_TRUE(testing::contains(r.why_not(), "a generator the replay does not advance")) << r.why_not();
  }
  {
    StepReplay r;
    r.begin(nullptr);
    StepReplay second;
    EXPECT_TRUE(testing::contains(testing::error_of([&] { second.begin(nullptr); }), "one at a time"));
    r.end();
    EXPECT_EQ(StepReplay::capturing(), nullptr);
  }
}

// On a GPU the step is captured as one CUDA graph: the capture runs the step once, and a replay
// on new inputs gives what launching the same work again gives, dropout included (its offsets
// moved on the device). Same kernels, same order: equal to the last bit, asserted within 1e-6.
TEST(StepReplay, OnCudaAReplayedGraphGivesTheLaunchedResult) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no GPU present: a captured CUDA step not replayed";
  const Device gpu = Device::cuda(0);
  const std::vector<float> first = {1, 2, 3, 4}, second = {-2, 0.5f, 7, 1}, third = {0.25f, 3, -1, 2};
  Generator launched_gen(11);
  std::vector<double> launched;
  for (const auto* v : {&first, &second, &third}) launched.push_back(work(Tensor::from(*v, {4}, gpu), launched_gen).item());

  Generator gen(11);
  StepReplay r;
  r.begin(&gen, gpu);
  ASSERT_EQ(StepReplay::capturing(), &r) << r.why_not();
  EXPECT_EQ(StepReplay::capturing_on(Device::cpu()), nullptr);
  const Tensor out = work(Tensor::from(first, {4}, gpu), gen);
  r.end();
  ASSERT_TRUE(r.usable()) << r.why_not();
  EXPECT_EQ(r.input_count(), 1u);
  EXPECT_GT(r.kept(), 3u);  // the graph's nodes: the input's copy, the kernels, the offset shift's set and reset
  EXPECT_EQ(r.check_inputs({bytes_of(first)}), "");
  EXPECT_NEAR(out.item(), launched[0], 1e-6);  // the capture ran the step once
  ASSERT_TRUE(r.replay({bytes_of(second)}));
  EXPECT_NEAR(out.item(), launched[1], 1e-6);
  ASSERT_TRUE(r.replay({bytes_of(third)}));
  EXPECT_NEAR(out.item(), launched[2], 1e-6);
  EXPECT_EQ(gen.offset, launched_gen.offset);
  // A launched mask after the replays draws at its own offset (the shift is back to 0).
  Tensor m = Tensor::empty({8}, DType::F32, gpu), c = Tensor::empty({8});
  backend(gpu).dropout_mask(5, 64, 0.5, m);
  backend(Device::cpu()).dropout_mask(5, 64, 0.5, c);
  EXPECT_EQ(m.values(), c.values());
}

// What a graph cannot replay (a key of the step's own) leaves it unusable, but the capture still
// runs the step; a host read while capturing stops the run with the reason, and the stream records
// nothing after it.
TEST(StepReplay, OnCudaWhatAGraphCannotHoldIsRefused) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no GPU present: a captured CUDA step not replayed";
  const Device gpu = Device::cuda(0);
  std::vector<int32_t> ids(64);
  for (int i = 0; i < 64; ++i) ids[static_cast<size_t>(i)] = i * 3;
  const std::vector<double> launched = ops::draw_distinct(Tensor::from(ids, {64}, gpu), 16, 7).values();
  {
    StepReplay r;
    r.begin(nullptr, gpu);
    const Tensor drawn = ops::draw_distinct(Tensor::from(ids, {64}, gpu), 16, 7);
    r.end();
    EXPECT_FALSE(r.usable());
    EXPECT_TRUE(testing::contains(r.why_not(), "draw_distinct")) << r.why_not();
    EXPECT_EQ(drawn.values(), launched);
  }
  {
    StepReplay r;
    r.begin(nullptr, gpu);
    const Tensor x = Tensor::from(std::vector<float>{1, 2}, {2}, gpu);
    EXPECT_TRUE(testing::contains(testing::error_of([&] { ops::sum(x).item(); }), "read a device value on the host"));
    r.abandon("the step failed");
    EXPECT_EQ(StepReplay::capturing(), nullptr);
    EXPECT_EQ(ops::sum(Tensor::from(std::vector<float>{1, 2}, {2}, gpu)).item(), 3.0);
  }
}

}  // namespace
}  // namespace sa
