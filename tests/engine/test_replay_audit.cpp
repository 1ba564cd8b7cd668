// The replay audit (engine/replay_audit.h): each step's primitives against the step before's, each
// in the first class that fits (sequence, shapes, scalar arguments, buffers), per thread.
#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <thread>

#include "engine/cpu/cpu_backend.h"
#include "engine/engine.h"
#include "engine/replay_audit.h"

namespace sa {
namespace {

struct AuditOn {
  AuditOn() { replay_audit::start(); }
  ~AuditOn() { replay_audit::stop(); }
};

template <typename F>
void step(F f) {
  replay_audit::step_begun();
  f();
  replay_audit::step_ended();
}

TEST(ReplayAudit, ClassesEachPrimitiveAgainstTheStepBefore) {
  Tensor a = Tensor::zeros({4, 3}, DType::F32), b = Tensor::zeros({4, 3}, DType::F32);
  Tensor c = Tensor::zeros({5, 3}, DType::F32), mask = Tensor::zeros({4, 3}, DType::F32);
  const AuditOn on;
  Backend& be = backend(Device::cpu());
  auto three = [&](Tensor& filled, uint64_t seed) {
    be.fill(filled, 1.0);
    be.dropout_mask(seed, 0, 0.5, mask);
    be.axpy(2.0, a, b);
  };
  step([&] { three(a, 7); });  // the first: nothing to compare with
  EXPECT_EQ(replay_audit::totals().steps, 0);
  step([&] { three(a, 7); });  // 3 as before
  step([&] { three(b, 7); });  // fill: another buffer
  step([&] { three(b, 8); });  // dropout_mask: another seed
  step([&] { three(c, 8); });  // fill: another shape
  step([&] {                   // another order: all 3
    be.axpy(2.0, a, b);
    three(c, 8);
  });
  ReplayAudit t = replay_audit::totals();
  EXPECT_EQ(t.steps, 5);
  EXPECT_EQ(t.launches, 16);
  EXPECT_EQ(t.same, 3 + 2 + 2 + 2);
  EXPECT_EQ(t.buffers, 1);
  EXPECT_EQ(t.values, 1);
  EXPECT_EQ(t.shapes, 1);
  EXPECT_EQ(t.order, 4);
  EXPECT_EQ(t.values_by, (std::map<std::string, int64_t>{{"dropout_mask", 1}}));
  EXPECT_EQ(t.shapes_by, (std::map<std::string, int64_t>{{"fill", 1}}));
  EXPECT_NE(replay_audit::summary(t).find("(dropout_mask 0.2)"), std::string::npos) << replay_audit::summary(t);

  // Reset keeps the last step as the next one's reference; a longer step past the end is order.
  replay_audit::reset_totals();
  step([&] {
    be.axpy(2.0, a, b);
    three(c, 8);
    be.fill(a, 0.0);
  });
  t = replay_audit::totals();
  EXPECT_EQ(t.steps, 1);
  EXPECT_EQ(t.same, 4);
  EXPECT_EQ(t.order, 1);
}

// Each thread's primitives are compared with the same thread's the step before, so threads that
// interleave differently from step to step (the CPU's LSTM sequences) still compare in order.
TEST(ReplayAudit, ComparesEachThreadWithItself) {
  Tensor a = Tensor::zeros({8}, DType::F32), b = Tensor::zeros({6}, DType::F32);
  const AuditOn on;
  Backend& be = backend(Device::cpu());
  std::mutex mu;
  std::condition_variable cv;
  int go = 0, done = 0;
  std::thread worker([&] {  // one thread through all steps, beside the calling one
    for (int s = 1; s <= 3; ++s) {
      std::unique_lock lock(mu);
      cv.wait(lock, [&] { return go >= s; });
      lock.unlock();
      for (int i = 0; i < 50; ++i) be.fill(b, 1.0);
      lock.lock();
      done = s;
      cv.notify_all();
    }
  });
  for (int s = 1; s <= 3; ++s)
    step([&] {
      {
        const std::lock_guard lock(mu);
        go = s;
      }
      cv.notify_all();
      for (int i = 0; i < 50; ++i) be.fill(a, 2.0);
      std::unique_lock lock(mu);
      cv.wait(lock, [&] { return done >= s; });
    });
  worker.join();
  const ReplayAudit t = replay_audit::totals();
  EXPECT_EQ(t.steps, 2);
  EXPECT_EQ(t.launches, 200);
  EXPECT_EQ(t.same, 200);
}

TEST(ReplayAudit, RecordsNothingOutsideAStepOrWhenOff) {
  Tensor a = Tensor::zeros({2}, DType::F32);
  {
    const AuditOn on;
    backend(Device::cpu()).fill(a, 1.0);  // outside a step
    step([] {});
    step([] {});
    EXPECT_EQ(replay_audit::totals().launches, 0);
  }
  EXPECT_FALSE(replay_audit::on());
  EXPECT_EQ(&backend_uncounted(Device::cpu()), &computing_cpu_backend());
}

}  // namespace
}  // namespace sa
