// Linear-chain CRF on the CPU: one sentence per OpenMP iteration, the per-sentence math of
// engine/core/crf_math.h. The backward accumulates the shared transition gradients sentence by
// sentence in order, so results do not depend on the thread count.
#include "engine/core/crf_math.h"
#include "engine/core/dispatch.h"
#include "engine/cpu/cpu_backend.h"

namespace sa {

void CpuBackend::crf_nll(const Tensor& em, const Tensor& tags, const Tensor& lengths, const Tensor& trans,
                         const Tensor& start, const Tensor& end, Tensor& loss, Tensor& alpha, Tensor& log_z) {
  const int64_t B = em.dim(0), T = em.dim(1), K = em.dim(2);
  dispatch_float(em.dtype(), "crf_nll", [&](auto tag) {
    using F = decltype(tag);
    const F* e = em.data<F>();
    const int32_t* y = tags.data<int32_t>();
    const int32_t* len = lengths.data<int32_t>();
#pragma omp parallel for schedule(dynamic)
    for (int64_t b = 0; b < B; ++b) {
      const int L = len[b];
      double* a = alpha.data<double>() + b * T * K;
      const double z = math::crf_log_partition(e + b * T * K, L, static_cast<int>(K), trans.data<F>(), start.data<F>(),
                                               end.data<F>(), a);
      log_z.data<double>()[b] = z;
      loss.data<F>()[b] = F(z - math::crf_path_score(e + b * T * K, y + b * T, L, static_cast<int>(K), trans.data<F>(),
                                                     start.data<F>(), end.data<F>()));
    }
  });
}

void CpuBackend::crf_nll_backward(const Tensor& em, const Tensor& tags, const Tensor& lengths, const Tensor& trans,
                                  const Tensor& end, const Tensor& alpha, const Tensor& log_z, const Tensor& gloss,
                                  Tensor& beta, Tensor& gem, Tensor& gtrans, Tensor& gstart, Tensor& gend) {
  const int64_t B = em.dim(0), T = em.dim(1), K = em.dim(2);
  fill(gem, 0.0);
  dispatch_float(em.dtype(), "crf_nll_backward", [&](auto tag) {
    using F = decltype(tag);
    auto add = [](F* p, double v) { *p = F(double(*p) + v); };
    for (int64_t b = 0; b < B; ++b)
      math::crf_gradients(em.data<F>() + b * T * K, tags.data<int32_t>() + b * T, lengths.data<int32_t>()[b],
                          static_cast<int>(K), trans.data<F>(), end.data<F>(), alpha.data<double>() + b * T * K,
                          log_z.data<double>()[b], double(gloss.data<F>()[b]), beta.data<double>() + b * T * K,
                          gem.data<F>() + b * T * K, gtrans.data<F>(), gstart.data<F>(), gend.data<F>(), add);
  });
}

void CpuBackend::crf_viterbi(const Tensor& em, const Tensor& lengths, const Tensor& trans, const Tensor& start,
                             const Tensor& end, Tensor& delta, Tensor& back, Tensor& path) {
  const int64_t B = em.dim(0), T = em.dim(1), K = em.dim(2);
  fill(path, 0.0);
  dispatch_float(em.dtype(), "crf_viterbi", [&](auto tag) {
    using F = decltype(tag);
#pragma omp parallel for schedule(dynamic)
    for (int64_t b = 0; b < B; ++b)
      math::crf_best_path(em.data<F>() + b * T * K, lengths.data<int32_t>()[b], static_cast<int>(K), trans.data<F>(),
                          start.data<F>(), end.data<F>(), delta.data<double>() + b * 2 * K,
                          back.data<int32_t>() + b * T * K, path.data<int32_t>() + b * T);
  });
}

}  // namespace sa
