// The multi-tensor primitives (one call for a whole parameter list) against their one-tensor forms:
// bit for bit on the CPU, within stated tolerances on CUDA. The lists hold more tensors than one
// CUDA launch packs (48), an empty tensor and tensors of several chunks (16,384 elements each).
#include <gtest/gtest.h>

#include <cmath>

#include "engine/engine.h"
#include "tests/test_util.h"

namespace sa {
namespace {

std::vector<int64_t> list_sizes() {
  std::vector<int64_t> sizes;
  for (int i = 0; i < 53; ++i) sizes.push_back(i == 7 ? 0 : (i % 10 == 3 ? 40'000 + i : 1 + 37 * i));
  return sizes;
}

// Deterministic values in (-1.5, 1.5) (shift > 0 for strictly positive ones, e.g. accumulators).
std::vector<Tensor> make_list(uint64_t seed, DType dt, Device d, double shift = 0) {
  std::vector<Tensor> xs;
  int64_t k = 0;
  for (int64_t n : list_sizes()) {
    std::vector<double> v(static_cast<size_t>(n));
    for (double& e : v) e = shift + 1.5 * std::sin(0.37 * static_cast<double>(++k) + static_cast<double>(seed));
    xs.push_back(Tensor::of(v, {n}, dt, d));
  }
  return xs;
}

std::vector<Tensor> clone_all(const std::vector<Tensor>& xs) {
  std::vector<Tensor> c;
  for (const Tensor& x : xs) c.push_back(x.clone());
  return c;
}

void expect_lists_equal(const std::vector<Tensor>& a, const std::vector<Tensor>& b, double rel, const char* what) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t t = 0; t < a.size(); ++t) {
    const std::vector<double> x = a[t].values(), y = b[t].values();
    ASSERT_EQ(x.size(), y.size());
    for (size_t i = 0; i < x.size(); ++i) {
      if (rel == 0) ASSERT_EQ(x[i], y[i]) << what << ": tensor " << t << " element " << i;
      else ASSERT_NEAR(x[i], y[i], rel * std::abs(y[i]) + rel) << what << ": tensor " << t << " element " << i;
    }
  }
}

TEST(MultiTensor, OnTheCpuEqualsTheOneTensorPrimitivesBitForBit) {
  Backend& be = backend(Device::cpu());
  for (DType dt : {DType::F32, DType::F64}) {
    const std::vector<Tensor> xs = make_list(1, dt, Device::cpu());
    // sum of squares: per tensor, then added in order
    double want = 0;
    Tensor part = Tensor::empty({1}, DType::F64), got = Tensor::empty({1}, DType::F64);
    for (const Tensor& x : xs) {
      be.sum_squares(x, part);
      want += part.item();
    }
    be.multi_sum_squares(xs, got);
    EXPECT_EQ(got.item(), want) << dtype_name(dt);
    // scale: x * T(factor)
    std::vector<Tensor> scaled = clone_all(xs), ref = clone_all(xs);
    be.multi_scale(scaled, Tensor::full({1}, 0.37, DType::F64));
    for (Tensor& r : ref) r.copy_from(ops::scale(r, 0.37));
    expect_lists_equal(scaled, ref, 0, "multi_scale");
    // Adagrad
    std::vector<Tensor> w = clone_all(xs), acc = make_list(2, dt, Device::cpu(), 2.0), g = make_list(3, dt, Device::cpu());
    std::vector<Tensor> w1 = clone_all(w), acc1 = clone_all(acc);
    be.multi_adagrad(w, acc, g, 0.2);
    for (size_t t = 0; t < w1.size(); ++t) be.adagrad(w1[t], acc1[t], g[t], 0.2);
    expect_lists_equal(w, w1, 0, "multi_adagrad weights");
    expect_lists_equal(acc, acc1, 0, "multi_adagrad accumulators");
    // cast to bf16 (a step's weight copies): each as the one-tensor cast rounds it
    std::vector<Tensor> copies;
    for (const Tensor& x : xs) copies.push_back(Tensor::empty(x.shape(), DType::BF16));
    be.multi_cast(xs, copies);
    for (size_t t = 0; t < xs.size(); ++t) EXPECT_EQ(copies[t].dtype(), DType::BF16);
    expect_lists_equal(copies, [&] {
      std::vector<Tensor> r;
      for (const Tensor& x : xs) r.push_back(x.to(DType::BF16));
      return r;
    }(), 0, "multi_cast");
  }
}

// Two Adam steps (decay on every other tensor) against the recurrence written out in double.
TEST(MultiTensor, AdamFollowsTheFormula) {
  for (DType dt : {DType::F32, DType::F64}) {
    const double tol = dt == DType::F32 ? 2e-6 : 1e-13;
    std::vector<Tensor> w = make_list(4, dt, Device::cpu()), m = make_list(5, dt, Device::cpu()),
                        v = make_list(6, dt, Device::cpu(), 2.0), g = make_list(7, dt, Device::cpu());
    std::vector<double> decay;
    for (size_t t = 0; t < w.size(); ++t) decay.push_back(t % 2 ? 0.01 : 0.0);
    std::vector<std::vector<double>> rw, rm, rv;
    for (size_t t = 0; t < w.size(); ++t) rw.push_back(w[t].values()), rm.push_back(m[t].values()), rv.push_back(v[t].values());
    for (int step = 1; step <= 2; ++step) {
      const AdamHyper h{0.05, 0.9, 0.999, 1e-6, 1 - std::pow(0.9, step), 1 - std::pow(0.999, step)};
      backend(Device::cpu()).multi_adam(w, m, v, g, decay, h);
      for (size_t t = 0; t < w.size(); ++t) {
        const std::vector<double> gv = g[t].values();
        for (size_t i = 0; i < gv.size(); ++i) {
          rm[t][i] = 0.9 * rm[t][i] + 0.1 * gv[i];
          rv[t][i] = 0.999 * rv[t][i] + 0.001 * gv[i] * gv[i];
          const double u = (rm[t][i] / h.c1) / (std::sqrt(rv[t][i] / h.c2) + 1e-6) + decay[t] * rw[t][i];
          rw[t][i] -= 0.05 * u;
        }
      }
    }
    for (size_t t = 0; t < w.size(); ++t) {
      const std::vector<double> got = w[t].values();
      for (size_t i = 0; i < got.size(); ++i)
        ASSERT_NEAR(got[i], rw[t][i], tol * (1 + std::abs(rw[t][i]))) << dtype_name(dt) << " tensor " << t << " element " << i;
    }
  }
}

TEST(MultiTensor, ListsThatDoNotPairUpAreRejected) {
  std::vector<Tensor> w = make_list(1, DType::F32, Device::cpu()), acc = make_list(2, DType::F32, Device::cpu(), 2.0);
  std::vector<Tensor> g(w.begin(), w.end() - 1);
  try {
    backend(Device::cpu()).multi_adagrad(w, acc, g, 0.1);
    FAIL() << "a short gradient list was accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("lists of 53 and 52 tensors"), std::string::npos) << e.what();
  }
}

// CUDA against the CPU: f32, 1e-6 relative for the updates, 1e-12 relative for the f64 sum.
TEST(MultiTensor, CudaMatchesCpu) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no GPU present: CUDA multi-tensor comparison skipped";
  const Device gpu = Device::cuda(0);
  auto to = [](const std::vector<Tensor>& xs, Device d) {
    std::vector<Tensor> r;
    for (const Tensor& x : xs) r.push_back(x.to(d));
    return r;
  };
  const std::vector<Tensor> xs = make_list(1, DType::F32, Device::cpu());
  Tensor c = Tensor::empty({1}, DType::F64), gsum = Tensor::empty({1}, DType::F64, gpu);
  backend(Device::cpu()).multi_sum_squares(xs, c);
  backend(gpu).multi_sum_squares(to(xs, gpu), gsum);
  EXPECT_NEAR(gsum.item(), c.item(), 1e-12 * c.item());

  std::vector<Tensor> sc = clone_all(xs), sg = to(xs, gpu);
  backend(Device::cpu()).multi_scale(sc, Tensor::full({1}, 0.37, DType::F64));
  backend(gpu).multi_scale(sg, Tensor::full({1}, 0.37, DType::F64, gpu));
  expect_lists_equal(sg, sc, 1e-6, "multi_scale");

  std::vector<Tensor> w = clone_all(xs), acc = make_list(2, DType::F32, Device::cpu(), 2.0),
                      g = make_list(3, DType::F32, Device::cpu());
  std::vector<Tensor> wg = to(w, gpu), accg = to(acc, gpu);
  backend(Device::cpu()).multi_adagrad(w, acc, g, 0.2);
  backend(gpu).multi_adagrad(wg, accg, to(g, gpu), 0.2);
  expect_lists_equal(wg, w, 1e-6, "multi_adagrad");
  expect_lists_equal(accg, acc, 1e-6, "multi_adagrad accumulators");

  std::vector<Tensor> m = make_list(5, DType::F32, Device::cpu()), v = make_list(6, DType::F32, Device::cpu(), 2.0);
  std::vector<Tensor> mg = to(m, gpu), vg = to(v, gpu);
  std::vector<double> decay(w.size(), 0.01);
  const AdamHyper h{0.05, 0.9, 0.999, 1e-6, 0.1, 0.001};
  backend(Device::cpu()).multi_adam(w, m, v, g, decay, h);
  backend(gpu).multi_adam(wg, mg, vg, to(g, gpu), decay, h);
  expect_lists_equal(wg, w, 1e-6, "multi_adam");
  expect_lists_equal(vg, v, 1e-6, "multi_adam second moments");

  // f32 -> bf16 copies in packs of 48 (53 tensors, one empty, some of several chunks): the same
  // rounding as the CPU's cast, bit for bit.
  std::vector<Tensor> cc, gc;
  for (const Tensor& x : xs) cc.push_back(Tensor::empty(x.shape(), DType::BF16)), gc.push_back(Tensor::empty(x.shape(), DType::BF16, gpu));
  backend(Device::cpu()).multi_cast(xs, cc);
  backend(gpu).multi_cast(to(xs, gpu), gc);
  expect_lists_equal(gc, cc, 0, "multi_cast");
}

}  // namespace
}  // namespace sa
