// CPU: the multi-tensor primitives (an optimizer's whole parameter list in one call). Each tensor
// goes through the same per-element code as its one-tensor primitive, so the results are the same.
#include <algorithm>

#include "engine/core/scalar_math.h"
#include "engine/cpu/cpu_backend.h"

namespace sa {

namespace {

void check_lists(const char* op, const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  SA_CHECK(a.size() == b.size(), "{}: lists of {} and {} tensors", op, a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i)
    SA_CHECK(a[i].numel() == b[i].numel() && a[i].dtype() == b[i].dtype(),
             "{}: tensor {} of the lists differs in size or dtype", op, i);
}

constexpr int64_t kChunk = 1 << 14;  // elements per task in the parallel loops

}  // namespace

void CpuBackend::multi_sum_squares(const std::vector<Tensor>& xs, Tensor& out) {
  double total = 0;
  Tensor part = Tensor::empty({1}, DType::F64);
  for (const Tensor& x : xs) {
    sum_squares(x, part);
    total += part.data<double>()[0];
  }
  out.data<double>()[0] = total;
}

void CpuBackend::multi_scale(const std::vector<Tensor>& xs, const Tensor& factor) {
  const double f = factor.data<double>()[0];
  for (const Tensor& x : xs)
    dispatch_float(x.dtype(), "multi_scale", [&](auto tag) {
      using T = decltype(tag);
      T* p = x.data<T>();
      const T ft = T(f);
      const int64_t n = x.numel();
#pragma omp parallel for if (n > kParallelMin)
      for (int64_t i = 0; i < n; ++i) p[i] = p[i] * ft;
    });
}

void CpuBackend::multi_adagrad(const std::vector<Tensor>& w, const std::vector<Tensor>& acc,
                               const std::vector<Tensor>& g, double lr) {
  check_lists("multi_adagrad", w, acc);
  check_lists("multi_adagrad", w, g);
  for (size_t i = 0; i < w.size(); ++i) {
    Tensor wi = w[i], ai = acc[i];
    adagrad(wi, ai, g[i], lr);
  }
}

void CpuBackend::multi_adam(const std::vector<Tensor>& w, const std::vector<Tensor>& m, const std::vector<Tensor>& v,
                            const std::vector<Tensor>& g, const std::vector<double>& weight_decay,
                            const AdamHyper& h) {
  check_lists("multi_adam", w, m);
  check_lists("multi_adam", w, v);
  check_lists("multi_adam", w, g);
  SA_CHECK(weight_decay.size() == w.size(), "multi_adam: {} weight decays for {} tensors", weight_decay.size(),
           w.size());
  for (size_t t = 0; t < w.size(); ++t)
    dispatch_float(w[t].dtype(), "multi_adam", [&](auto tag) {
      using T = decltype(tag);
      const auto k = math::AdamConsts<T>::of(h);
      const T wd = T(weight_decay[t]);
      T *ws = w[t].data<T>(), *ms = m[t].data<T>(), *vs = v[t].data<T>();
      const T* gs = g[t].data<T>();
      const int64_t n = w[t].numel();
#pragma omp parallel for if (n > kParallelMin)
      for (int64_t c = 0; c < n; c += kChunk) {
        const int64_t end = std::min(n, c + kChunk);  // a bound the vectorizer can count
        for (int64_t i = c; i < end; ++i) ws[i] = math::adam_step(ws[i], ms[i], vs[i], gs[i], k, wd);
      }
    });
}

void CpuBackend::multi_cast(const std::vector<Tensor>& src, const std::vector<Tensor>& dst) {
  SA_CHECK(src.size() == dst.size(), "multi_cast: lists of {} and {} tensors", src.size(), dst.size());
  for (size_t i = 0; i < src.size(); ++i) {
    SA_CHECK(src[i].numel() == dst[i].numel(), "multi_cast: tensor {} of the lists differs in size", i);
    Tensor d = dst[i];
    cast(src[i], d);
  }
}

}  // namespace sa
