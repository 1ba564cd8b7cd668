// A training-like loop (embedding lookup with sparse gradients, char conv, highway, LSTM cell,
// softmax loss, backward, update) run many times must keep memory flat: nothing left on the tape,
// no tensor kept alive, and the caching allocator stops asking the system for memory.
#include <gtest/gtest.h>

#include "engine/engine.h"

namespace sa {
namespace {

struct TinyModel {
  Tensor emb, conv_w, conv_b, hw_wc, hw_wt, w_gates, out_w;
  explicit TinyModel(Device d) {
    auto p = [&](Shape s, double scale) {
      std::vector<double> v(static_cast<size_t>(numel(s)));
      for (size_t i = 0; i < v.size(); ++i) v[i] = scale * std::sin(0.37 * static_cast<double>(i) + 1.0);
      return Tensor::of(v, s, DType::F32, d).set_requires_grad();
    };
    emb = p({40, 8}, 0.5).set_sparse_grad();
    conv_w = p({3, 8, 16}, 0.2);
    conv_b = p({16}, 0.1);
    hw_wc = p({16, 16}, 0.2);
    hw_wt = p({16, 16}, 0.2);
    w_gates = p({16, 64}, 0.2);
    out_w = p({16, 40}, 0.2);
  }
  std::vector<Tensor> params() { return {emb, conv_w, conv_b, hw_wc, hw_wt, w_gates, out_w}; }
};

double step(TinyModel& m, Device d, Generator& gen) {
  std::vector<int32_t> chars(6 * 7), labels(6);
  for (size_t i = 0; i < chars.size(); ++i) chars[i] = static_cast<int32_t>((i * 7 + 3) % 40);
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<int32_t>((i * 11) % 40);
  Tensor ids = Tensor::from(chars, {6, 7}, d), lab = Tensor::from(labels, {6}, d);
  Tensor x = ops::conv1d_max(ops::gather_rows(m.emb, ids), m.conv_w, m.conv_b);
  x = ops::highway(ops::matmul(x, m.hw_wc), ops::matmul(x, m.hw_wt), x);
  x = ops::dropout(x, 0.1, gen);
  auto [c, h] = ops::lstm_cell(ops::matmul(x, m.w_gates), Tensor::zeros({6, 16}, DType::F32, d), 1.0, 3.0);
  Tensor loss = ops::mean(ops::cross_entropy(ops::matmul(h, m.out_w), lab));
  double value = loss.item();
  backward(loss);
  NoGrad ng;
  for (Tensor& p : m.params()) {
    if (p.grad().defined()) backend(d).axpy(-0.1, p.grad(), p);
    if (!p.sparse_grad().empty()) {
      auto [rows, g] = p.sparse_grad().coalesce();
      backend(d).scatter_add_rows(ops::scale(g, -0.1), rows, p);
    }
    p.zero_grad();
  }
  return value;
}

void check_flat(Device d) {
  TinyModel m(d);
  Generator gen(5);
  CachingAllocator& a = backend_uncounted(d).allocator();
  double first = step(m, d, gen);
  step(m, d, gen);
  AllocatorStats base = a.stats();
  double last = 0;
  for (int i = 0; i < 200; ++i) {
    last = step(m, d, gen);
    AllocatorStats s = a.stats();
    ASSERT_EQ(s.in_use, base.in_use) << "live memory grew at iteration " << i;
    ASSERT_EQ(s.raw_allocs, base.raw_allocs) << "the allocator asked the system for memory at iteration " << i;
    ASSERT_EQ(tape_size(), 0u);
  }
  EXPECT_LT(last, first) << "the loop should also be learning";
}

TEST(Leak, TrainingLoopKeepsCpuMemoryFlat) { check_flat(Device::cpu()); }

TEST(Leak, TrainingLoopKeepsCudaMemoryFlat) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no GPU present: CUDA leak test skipped";
  check_flat(Device::cuda(0));
}

}  // namespace
}  // namespace sa
