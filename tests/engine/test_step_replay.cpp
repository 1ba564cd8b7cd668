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
  ASSERT_EQ(r.inputs().size(), 1u);
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

}  // namespace
}  // namespace sa
