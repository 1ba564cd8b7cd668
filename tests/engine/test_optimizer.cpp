// Adagrad (dense and row-sparse) and global-norm clipping.
#include <gtest/gtest.h>

#include <random>

#include <cmath>

#include "engine/optim/optimizer.h"

namespace sa {
namespace {

// Three Adam steps against the recurrences written out in double, with and without weight decay.
TEST(Adam, StepsMatchTheFormula) {
  for (double wd : {0.0, 0.01}) {
    Tensor w = Tensor::of({1.0, -2.0, 0.5}, {3}, DType::F64).set_requires_grad();
    Adam opt(0.1, 0.9, 0.999, 1e-8, wd);
    double ref[3] = {1.0, -2.0, 0.5}, m[3] = {}, v[3] = {};
    for (int t = 1; t <= 3; ++t) {
      // loss = sum(w^3): g = 3 w^2
      backward(ops::sum(ops::mul(ops::square(w), w)));
      opt.step({w});
      for (int i = 0; i < 3; ++i) {
        const double g = 3 * ref[i] * ref[i];
        m[i] = 0.9 * m[i] + 0.1 * g;
        v[i] = 0.999 * v[i] + 0.001 * g * g;
        const double mh = m[i] / (1 - std::pow(0.9, t)), vh = v[i] / (1 - std::pow(0.999, t));
        ref[i] -= 0.1 * (mh / (std::sqrt(vh) + 1e-8) + wd * ref[i]);
      }
      const std::vector<double> got = w.values();
      for (int i = 0; i < 3; ++i) EXPECT_NEAR(got[i], ref[i], 1e-14) << "step " << t << " element " << i;
    }
    EXPECT_EQ(opt.steps(), 3);
    EXPECT_FALSE(w.grad().defined());
  }
}

TEST(Adagrad, DenseStepMatchesTheFormula) {
  Tensor w = Tensor::of({1.0, -2.0}, {2}, DType::F64).set_requires_grad();
  backward(ops::sum(ops::mul(w, Tensor::of({3.0, 0.5}, {2}, DType::F64))));  // g = (3, 0.5)
  Adagrad opt(0.2, 1.0);
  opt.step({w});
  std::vector<double> v = w.values();
  EXPECT_NEAR(v[0], 1.0 - 0.2 * 3.0 / std::sqrt(1.0 + 9.0), 1e-15);
  EXPECT_NEAR(v[1], -2.0 - 0.2 * 0.5 / std::sqrt(1.0 + 0.25), 1e-15);
  EXPECT_FALSE(w.grad().defined());
}

TEST(Adagrad, SparseUpdatesEqualDenseAndLeaveOtherRowsAlone) {
  std::vector<double> init(6 * 3);
  for (size_t i = 0; i < init.size(); ++i) init[i] = std::cos(static_cast<double>(i));
  Tensor dense = Tensor::of(init, {6, 3}, DType::F64).set_requires_grad();
  Tensor sparse = Tensor::of(init, {6, 3}, DType::F64).set_requires_grad().set_sparse_grad();
  Adagrad od(0.2), os(0.2);
  std::vector<std::vector<int32_t>> batches = {{1, 4, 1}, {0, 1, 1, 5}, {4}};  // with duplicates
  for (const auto& b : batches) {
    Tensor idx = Tensor::from(b, {static_cast<int64_t>(b.size())});
    for (Tensor t : {dense, sparse}) backward(ops::sum(ops::square(ops::add_scalar(ops::gather_rows(t, idx), 0.3))));
    od.step({dense});
    os.step({sparse});
  }
  std::vector<double> a = dense.values(), b = sparse.values();
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-14) << "element " << i;
  // rows 2 and 3 were never gathered: parameters and accumulators untouched
  std::vector<double> acc = os.accumulator(sparse).values();
  for (int r : {2, 3})
    for (int c = 0; c < 3; ++c) {
      EXPECT_EQ(b[r * 3 + c], init[r * 3 + c]);
      EXPECT_EQ(acc[r * 3 + c], 1.0);
    }
}

// The fused Adagrad kernels on CUDA against the CPU (f32, tolerance 1e-6 relative).
TEST(Adagrad, CudaKernelsMatchCpu) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no GPU present: CUDA Adagrad comparison skipped";
  std::vector<double> w(7 * 5), g(7 * 5), rows(3 * 5);
  for (size_t i = 0; i < w.size(); ++i) w[i] = std::sin(1.0 + i), g[i] = std::cos(2.0 * i);
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = std::sin(0.5 * i);
  Tensor ids = Tensor::from(std::vector<int32_t>{6, 0, 3}, {3});
  std::vector<std::vector<double>> out;
  for (Device d : {Device::cpu(), Device::cuda(0)}) {
    Tensor tw = Tensor::of(w, {7, 5}, DType::F32, d), acc = Tensor::full({7, 5}, 1.0, DType::F32, d);
    backend(d).adagrad(tw, acc, Tensor::of(g, {7, 5}, DType::F32, d), 0.2);
    backend(d).adagrad_rows(tw, acc, ids.to(d), Tensor::of(rows, {3, 5}, DType::F32, d), 0.2);
    out.push_back(tw.values());
    out.push_back(acc.values());
  }
  for (size_t k = 0; k < 2; ++k)
    for (size_t i = 0; i < out[k].size(); ++i) EXPECT_NEAR(out[k][i], out[k + 2][i], 1e-6 * std::abs(out[k][i]) + 1e-7);
}

// The gradient-norm primitive: the sum of squares in double, over a tensor long enough to split
// over threads, in f32 and f64; 0 for an empty tensor.
TEST(SumSquares, IsTheSumOfSquaresInDouble) {
  std::mt19937_64 rng(3);
  std::normal_distribution<double> g(0, 1);
  for (DType dt : {DType::F32, DType::F64}) {
    std::vector<double> v(100'003);
    for (double& e : v) e = g(rng);
    const Tensor x = Tensor::of(v, {static_cast<int64_t>(v.size())}, dt);
    double want = 0;
    for (double e : x.values()) want += e * e;
    Tensor out = Tensor::empty({1}, DType::F64);
    backend(Device::cpu()).sum_squares(x, out);
    EXPECT_NEAR(out.values()[0], want, 1e-12 * want) << dtype_name(dt);
    backend(Device::cpu()).sum_squares(Tensor::zeros({0}, dt), out);
    EXPECT_EQ(out.values()[0], 0.0);
  }
}

TEST(ClipGlobalNorm, CountsSparseRowsAndScalesEverything) {
  Tensor w = Tensor::of({0.0, 0.0}, {2}, DType::F64).set_requires_grad();
  Tensor t = Tensor::of({0, 0, 0, 0}, {2, 2}, DType::F64).set_requires_grad().set_sparse_grad();
  Tensor idx = Tensor::from(std::vector<int32_t>{1, 1}, {2});
  Tensor loss = ops::add(ops::sum(ops::mul(w, Tensor::of({3.0, 4.0}, {2}, DType::F64))),
                         ops::sum(ops::mul(ops::gather_rows(t, idx), Tensor::of({6, 0, 0, 0}, {2, 2}, DType::F64))));
  backward(loss);
  coalesce_sparse_grads({w, t});
  EXPECT_NEAR(global_norm({w, t}), std::sqrt(9.0 + 16.0 + 36.0), 1e-12);
  EXPECT_EQ(w.grad().values()[0], 3.0);  // global_norm leaves the gradients as they are
  double norm = clip_global_norm({w, t}, 5.0);
  EXPECT_NEAR(norm, std::sqrt(9.0 + 16.0 + 36.0), 1e-12);
  double s = 5.0 / norm;
  EXPECT_NEAR(w.grad().values()[0], 3.0 * s, 1e-12);
  EXPECT_NEAR(t.sparse_grad().rows[0].values()[0], 6.0 * s, 1e-12);
  EXPECT_NEAR(clip_global_norm({w, t}, 5.0), 5.0, 1e-12);  // already within the limit: unchanged
}

// The factor is computed and applied on the device, and gives f32 gradients bit for bit what a
// host-side factor gives (x * float(max_norm / norm), and nothing changed within the limit), so
// trainings reproduce the runs made before it.
TEST(ClipGlobalNorm, OnTheDeviceEqualsTheHostFactorBitForBit) {
  std::mt19937_64 rng(11);
  std::normal_distribution<double> n01;
  for (double max_norm : {0.5, 1e6}) {
    std::vector<Tensor> params;
    std::vector<std::vector<double>> grads;
    for (int64_t size : {7, 300, 64}) {
      Tensor p = Tensor::zeros({size}, DType::F32).set_requires_grad();
      std::vector<double> g(static_cast<size_t>(size));
      for (double& v : g) v = n01(rng);
      backward(ops::sum(ops::mul(p, Tensor::of(g, {size}, DType::F32))));
      grads.push_back(p.grad().values());  // as f32 holds them
      params.push_back(p);
    }
    const double norm = global_norm(params);
    const Tensor on_device = clip_by_global_norm(params, max_norm);
    EXPECT_EQ(on_device.item(), norm);
    const float s = static_cast<float>(max_norm / norm);
    for (size_t k = 0; k < params.size(); ++k) {
      const std::vector<double> now = params[k].grad().values();
      for (size_t i = 0; i < now.size(); ++i) {
        const float want = norm > max_norm ? static_cast<float>(grads[k][i]) * s : static_cast<float>(grads[k][i]);
        ASSERT_EQ(static_cast<float>(now[i]), want) << "max_norm " << max_norm << ", tensor " << k << ", element " << i;
      }
    }
  }
}

}  // namespace
}  // namespace sa
