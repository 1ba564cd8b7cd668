// Linear-chain CRF on CUDA: one thread per sentence running the same per-sentence math as the
// CPU (engine/core/crf_math.h). NER batches are tens of sentences with tens of tags, so this is
// small next to the BiLSTM under it; the shared transition gradients are accumulated atomically.
#include "engine/core/crf_math.h"
#include "engine/cuda/cuda_backend.cuh"
#include "engine/cuda/cuda_common.cuh"

namespace sa {

using namespace cudak;

namespace {

template <typename T>
__global__ void crf_nll_kernel(const T* em, const int32_t* tags, const int32_t* len, const T* trans, const T* start,
                               const T* end, int64_t B, int64_t Tn, int K, T* loss, double* alpha, double* log_z) {
  CUDA_LOOP(b, B) {
    const T* e = em + b * Tn * K;
    const double z = math::crf_log_partition(e, len[b], K, trans, start, end, alpha + b * Tn * K);
    log_z[b] = z;
    loss[b] = T(z - math::crf_path_score(e, tags + b * Tn, len[b], K, trans, start, end));
  }
}

template <typename T>
__device__ void atomic_add_value(T* p, double v) {
  atomicAdd(p, T(v));
}

template <typename T>
__global__ void crf_nll_backward_kernel(const T* em, const int32_t* tags, const int32_t* len, const T* trans,
                                        const T* end, const double* alpha, const double* log_z, const T* gloss,
                                        int64_t B, int64_t Tn, int K, double* beta, T* gem, T* gtrans, T* gstart,
                                        T* gend) {
  CUDA_LOOP(b, B) {
    auto add = [](T* p, double v) { atomic_add_value(p, v); };
    math::crf_gradients(em + b * Tn * K, tags + b * Tn, len[b], K, trans, end, alpha + b * Tn * K, log_z[b],
                        double(gloss[b]), beta + b * Tn * K, gem + b * Tn * K, gtrans, gstart, gend, add);
  }
}

template <typename T>
__global__ void crf_viterbi_kernel(const T* em, const int32_t* len, const T* trans, const T* start, const T* end,
                                   int64_t B, int64_t Tn, int K, double* delta, int32_t* back, int32_t* path) {
  CUDA_LOOP(b, B) {
    math::crf_best_path(em + b * Tn * K, len[b], K, trans, start, end, delta + b * 2 * K, back + b * Tn * K,
                        path + b * Tn);
  }
}

}  // namespace

void CudaBackend::crf_nll(const Tensor& em, const Tensor& tags, const Tensor& lengths, const Tensor& trans,
                          const Tensor& start, const Tensor& end, Tensor& loss, Tensor& alpha, Tensor& log_z) {
  const int64_t B = em.dim(0), Tn = em.dim(1);
  const int K = static_cast<int>(em.dim(2));
  dispatch(em.dtype(), "crf_nll", [&](auto tag) {
    using T = decltype(tag);
    crf_nll_kernel<<<blocks_for(B, 64), 64, 0, stream()>>>(em.data<T>(), tags.data<int32_t>(), lengths.data<int32_t>(),
                                                          trans.data<T>(), start.data<T>(), end.data<T>(), B, Tn, K,
                                                          loss.data<T>(), alpha.data<double>(), log_z.data<double>());
  });
  CUDA_LAUNCHED("crf_nll");
}

void CudaBackend::crf_nll_backward(const Tensor& em, const Tensor& tags, const Tensor& lengths, const Tensor& trans,
                                   const Tensor& end, const Tensor& alpha, const Tensor& log_z, const Tensor& gloss,
                                   Tensor& beta, Tensor& gem, Tensor& gtrans, Tensor& gstart, Tensor& gend) {
  const int64_t B = em.dim(0), Tn = em.dim(1);
  const int K = static_cast<int>(em.dim(2));
  fill(gem, 0.0);
  dispatch(em.dtype(), "crf_nll_backward", [&](auto tag) {
    using T = decltype(tag);
    crf_nll_backward_kernel<<<blocks_for(B, 64), 64, 0, stream()>>>(
        em.data<T>(), tags.data<int32_t>(), lengths.data<int32_t>(), trans.data<T>(), end.data<T>(),
        alpha.data<double>(), log_z.data<double>(), gloss.data<T>(), B, Tn, K, beta.data<double>(), gem.data<T>(),
        gtrans.data<T>(), gstart.data<T>(), gend.data<T>());
  });
  CUDA_LAUNCHED("crf_nll_backward");
}

void CudaBackend::crf_viterbi(const Tensor& em, const Tensor& lengths, const Tensor& trans, const Tensor& start,
                              const Tensor& end, Tensor& delta, Tensor& back, Tensor& path) {
  const int64_t B = em.dim(0), Tn = em.dim(1);
  const int K = static_cast<int>(em.dim(2));
  fill(path, 0.0);
  dispatch(em.dtype(), "crf_viterbi", [&](auto tag) {
    using T = decltype(tag);
    crf_viterbi_kernel<<<blocks_for(B, 64), 64, 0, stream()>>>(em.data<T>(), lengths.data<int32_t>(), trans.data<T>(),
                                                               start.data<T>(), end.data<T>(), B, Tn, K,
                                                               delta.data<double>(), back.data<int32_t>(),
                                                               path.data<int32_t>());
  });
  CUDA_LAUNCHED("crf_viterbi");
}

}  // namespace sa
