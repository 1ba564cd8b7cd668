// Attention on the CPU: the reference. Batched GEMMs for the scores and the products, row loops for
// the masked softmax and dropout; the backward recomputes the probabilities from the saved row
// log-sum-exps, as the CUDA kernels do. Under precision = "bf16" every GEMM takes its operands
// rounded (gemm_operand), as CUDA's GEMM path does.
#include <cmath>
#include <algorithm>
#include <limits>

#include "engine/core/philox.h"
#include "engine/core/scalar_math.h"
#include "engine/core/precision.h"
#include "engine/cpu/cpu_backend.h"

namespace sa {

namespace {

struct Dims {
  int64_t B, H, T, d;
  int64_t BH() const { return B * H; }
};

Dims dims_of(const Tensor& q) { return {q.dim(0), q.dim(1), q.dim(2), q.dim(3)}; }

// scores[bh] = alpha * a[bh] b[bh]^T (or a^T b, ...): the batched GEMM over the B*H heads.
GemmArgs batched(const Dims& s, bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, int64_t sa, int64_t sb,
                 int64_t sc) {
  GemmArgs g;
  g.trans_a = ta, g.trans_b = tb, g.m = m, g.n = n, g.k = k, g.alpha = alpha, g.batch = s.BH();
  g.stride_a = sa, g.stride_b = sb, g.stride_c = sc;
  return g;
}

// out = probs times their dropout factors, 0 or 1 / (1 - p) (out may be probs itself): element
// e = (bh * T + i) * T + j takes value offset + e of the Philox stream, as on CUDA. One Philox
// call per block of four (a call per element was most of the CPU's attention).
template <typename T>
void drop_rows(uint64_t seed, uint64_t offset, double p, const Dims& s, const T* probs, T* out) {
  const int64_t rows = s.BH() * s.T;
  if (p == 0) {
    if (out != probs) std::copy(probs, probs + rows * s.T, out);
    return;
  }
  const T kept = T(1) / (T(1) - T(p));
  const float pf = static_cast<float>(p);
#pragma omp parallel for
  for (int64_t r = 0; r < rows; ++r)
    philox_uniforms(seed, offset + static_cast<uint64_t>(r * s.T), static_cast<uint64_t>(s.T),
                    [in = probs + r * s.T, o = out + r * s.T, pf, kept](uint64_t j, float u) {
                      o[j] = in[j] * (u < pf ? T(0) : kept);
                    });
}

// probs[bh, i, :] = exp(scores - lse) with padding keys 0; with compute_lse, lse is computed and
// stored. The loops are SIMD: the per-element double exp had cost as much as the products.
template <typename T>
void softmax_rows(T* scores, const uint8_t* mask, const Dims& s, T* lse, bool compute_lse) {
#pragma omp parallel for
  for (int64_t r = 0; r < s.BH() * s.T; ++r) {
    const int64_t b = r / (s.H * s.T);
    const uint8_t* keys = mask + b * s.T;
    T* row = scores + r * s.T;
    if (compute_lse) {
      T m = -std::numeric_limits<T>::infinity();
#pragma omp simd reduction(max : m)
      for (int64_t j = 0; j < s.T; ++j) m = keys[j] && row[j] > m ? row[j] : m;
      T z = 0;
#pragma omp simd reduction(+ : z)
      for (int64_t j = 0; j < s.T; ++j) z += keys[j] ? math::exp(row[j] - m) : T(0);
      lse[r] = m + math::log(z);
    }
    const T l = lse[r];
#pragma omp simd
    for (int64_t j = 0; j < s.T; ++j) row[j] = keys[j] ? math::exp(row[j] - l) : T(0);
  }
}

}  // namespace

void CpuBackend::attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& key_mask, double scale,
                           double p, uint64_t seed, uint64_t offset, Tensor& out, Tensor& lse) {
  const Dims s = dims_of(q);
  const int64_t TT = s.T * s.T, Td = s.T * s.d;
  Tensor probs = Tensor::empty({s.BH(), s.T, s.T}, q.dtype(), Device::cpu());
  gemm(batched(s, false, true, s.T, s.T, s.d, scale, Td, Td, TT), gemm_operand(q), gemm_operand(k), probs);
  dispatch_float(q.dtype(), "attention", [&](auto tag) {
    using T = decltype(tag);
    T* P = probs.data<T>();
    softmax_rows(P, key_mask.data<uint8_t>(), s, lse.data<T>(), true);
    drop_rows(seed, offset, p, s, P, P);
  });
  gemm(batched(s, false, false, s.T, s.d, s.T, 1.0, TT, Td, Td), gemm_operand(probs), gemm_operand(v), out);
}

void CpuBackend::attention_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& key_mask,
                                    double scale, double p, uint64_t seed, uint64_t offset, const Tensor&,
                                    const Tensor& lse, const Tensor& gout, Tensor& gq, Tensor& gk, Tensor& gv) {
  const Dims s = dims_of(q);
  const int64_t TT = s.T * s.T, Td = s.T * s.d;
  auto scratch = [&] { return Tensor::empty({s.BH(), s.T, s.T}, q.dtype(), Device::cpu()); };
  Tensor probs = scratch(), dropped = scratch(), gprobs = scratch();
  const Tensor qo = gemm_operand(q), ko = gemm_operand(k), go = gemm_operand(gout);
  gemm(batched(s, false, true, s.T, s.T, s.d, scale, Td, Td, TT), qo, ko, probs);
  dispatch_float(q.dtype(), "attention", [&](auto tag) {
    using T = decltype(tag);
    T* P = probs.data<T>();
    T* L = const_cast<T*>(lse.data<T>());
    softmax_rows(P, key_mask.data<uint8_t>(), s, L, false);
    drop_rows(seed, offset, p, s, static_cast<const T*>(P), dropped.data<T>());
  });
  // gv = Pd^T gout; gPd = gout v^T
  gemm(batched(s, true, false, s.T, s.d, s.T, 1.0, TT, Td, Td), gemm_operand(dropped), go, gv);
  gemm(batched(s, false, true, s.T, s.T, s.d, 1.0, Td, Td, TT), go, gemm_operand(v), gprobs);
  dispatch_float(q.dtype(), "attention", [&](auto tag) {
    using T = decltype(tag);
    const T* P = probs.data<T>();
    const T* Pd = dropped.data<T>();
    T* G = gprobs.data<T>();  // becomes dS = P * (keep * gPd - D) = Pd * gPd - P * D: the dropped
                              // probabilities carry the dropout factors, so none is drawn again
#pragma omp parallel for
    for (int64_t r = 0; r < s.BH() * s.T; ++r) {
      double D = 0;
      for (int64_t j = 0; j < s.T; ++j) D += static_cast<double>(Pd[r * s.T + j]) * G[r * s.T + j];
      for (int64_t j = 0; j < s.T; ++j)
        G[r * s.T + j] = static_cast<T>(static_cast<double>(Pd[r * s.T + j]) * G[r * s.T + j] - P[r * s.T + j] * D);
    }
  });
  // gq = scale dS k; gk = scale dS^T q
  const Tensor dso = gemm_operand(gprobs);
  gemm(batched(s, false, false, s.T, s.d, s.T, scale, TT, Td, Td), dso, ko, gq);
  gemm(batched(s, true, false, s.T, s.d, s.T, scale, TT, Td, Td), dso, qo, gk);
}

}  // namespace sa
