// Attention on CUDA without the [T, T] scores in global memory (FlashAttention's idea, written for
// clarity over peak speed): one thread per query row walks the keys tile by tile from shared
// memory with an online softmax. The backward recomputes each probability from the saved row
// log-sum-exp: one kernel per key for dK and dV, one per query for dQ, so nothing is written twice
// and no atomics are needed.
#include <algorithm>
#include <cstdlib>
#include <string>

#include "engine/core/precision.h"
#include "engine/cuda/cuda_attention.cuh"
#include "engine/cuda/cuda_backend.cuh"

namespace sa {

using namespace cudak;

namespace {

constexpr int kRows = 64;      // query (or key) rows per block, one per thread
constexpr int kTile = 16;      // keys (or queries) per shared-memory tile

// Loads rows [r0, r0 + kTile) of a [T, d] matrix into tile[kTile][D] (zeros past T).
template <typename T, int D>
__device__ void load_tile(const T* m, int64_t r0, const AttnShape& s, T (*tile)[D]) {
  for (int e = threadIdx.x; e < kTile * D; e += blockDim.x) {
    const int r = e / D, c = e % D;
    tile[r][c] = (r0 + r < s.T && c < s.d) ? m[(r0 + r) * s.d + c] : T(0);
  }
}

template <typename T, int D>
__global__ void attention_forward_kernel(const T* q, const T* k, const T* v, const uint8_t* mask, AttnShape s, T* out,
                                         T* lse) {
  __shared__ T ks[kTile][D], vs[kTile][D];
  const int64_t bh = blockIdx.y, b = bh / s.H, i = blockIdx.x * kRows + threadIdx.x;
  const bool live = i < s.T;
  const T* Q = q + bh * s.T * s.d;
  T qi[D], acc[D];
  for (int c = 0; c < D; ++c) qi[c] = live && c < s.d ? Q[i * s.d + c] * T(s.scale) : T(0), acc[c] = T(0);
  T m = -INFINITY, l = T(0);
  for (int64_t j0 = 0; j0 < s.T; j0 += kTile) {
    __syncthreads();
    load_tile<T, D>(k + bh * s.T * s.d, j0, s, ks);
    load_tile<T, D>(v + bh * s.T * s.d, j0, s, vs);
    __syncthreads();
    if (!live) continue;
    for (int jj = 0; jj < kTile && j0 + jj < s.T; ++jj) {
      const int64_t j = j0 + jj;
      if (!mask[b * s.T + j]) continue;
      T sc = T(0);
      for (int c = 0; c < D; ++c) sc += qi[c] * ks[jj][c];
      if (sc > m) {  // a new maximum: rescale what is summed so far
        const T r = exp(m - sc);
        l *= r;
        for (int c = 0; c < D; ++c) acc[c] *= r;
        m = sc;
      }
      const T e = exp(sc - m);
      l += e;
      const T w = e * keep_factor<T>(s, bh, i, j);
      if (w != T(0))
        for (int c = 0; c < D; ++c) acc[c] += w * vs[jj][c];
    }
  }
  if (!live) return;
  T* O = out + (bh * s.T + i) * s.d;
  // A row with every key padded: 0, as the CPU gives (and lse = -inf).
  for (int c = 0; c < s.d; ++c) O[c] = l > T(0) ? acc[c] / l : T(0);
  lse[bh * s.T + i] = m + log(l);
}

// delta[row] = gout[row] . out[row]: the softmax backward's row term (sum_j Pd_ij dPd_ij).
template <typename T>
__global__ void attention_delta_kernel(const T* out, const T* gout, int64_t rows, int64_t d, T* delta) {
  CUDA_LOOP(r, rows) {
    T acc = T(0);
    for (int64_t c = 0; c < d; ++c) acc += out[r * d + c] * gout[r * d + c];
    delta[r] = acc;
  }
}

// One thread per key j: dV_j = sum_i Pd_ij dO_i, dK_j = scale sum_i dS_ij q_i.
template <typename T, int D>
__global__ void attention_dkdv_kernel(const T* q, const T* k, const T* v, const uint8_t* mask, const T* lse,
                                      const T* delta, const T* gout, AttnShape s, T* gk, T* gv) {
  __shared__ T qs[kTile][D], gos[kTile][D];
  const int64_t bh = blockIdx.y, b = bh / s.H, j = blockIdx.x * kRows + threadIdx.x;
  const bool live = j < s.T && mask[b * s.T + min(j, s.T - 1)];
  const int64_t base = bh * s.T * s.d;
  T kj[D], vj[D], dk[D], dv[D];
  for (int c = 0; c < D; ++c) {
    const bool in = j < s.T && c < s.d;
    kj[c] = in ? k[base + j * s.d + c] : T(0), vj[c] = in ? v[base + j * s.d + c] : T(0), dk[c] = dv[c] = T(0);
  }
  for (int64_t i0 = 0; i0 < s.T; i0 += kTile) {
    __syncthreads();
    load_tile<T, D>(q + base, i0, s, qs);
    load_tile<T, D>(gout + base, i0, s, gos);
    __syncthreads();
    if (!live) continue;
    for (int ii = 0; ii < kTile && i0 + ii < s.T; ++ii) {
      const int64_t i = i0 + ii;
      T sc = T(0), dpd = T(0);
      for (int c = 0; c < D; ++c) sc += qs[ii][c] * kj[c], dpd += gos[ii][c] * vj[c];
      const T P = exp(sc * T(s.scale) - lse[bh * s.T + i]), keep = keep_factor<T>(s, bh, i, j);
      const T ds = P * (keep * dpd - delta[bh * s.T + i]);
      for (int c = 0; c < D; ++c) dv[c] += P * keep * gos[ii][c], dk[c] += T(s.scale) * ds * qs[ii][c];
    }
  }
  if (j >= s.T) return;
  for (int c = 0; c < s.d; ++c) gk[base + j * s.d + c] = dk[c], gv[base + j * s.d + c] = dv[c];
}

// One thread per query i: dQ_i = scale sum_j dS_ij k_j.
template <typename T, int D>
__global__ void attention_dq_kernel(const T* q, const T* k, const T* v, const uint8_t* mask, const T* lse,
                                    const T* delta, const T* gout, AttnShape s, T* gq) {
  __shared__ T ks[kTile][D], vs[kTile][D];
  const int64_t bh = blockIdx.y, b = bh / s.H, i = blockIdx.x * kRows + threadIdx.x;
  const bool live = i < s.T;
  const int64_t base = bh * s.T * s.d;
  T qi[D], go[D], dq[D];
  for (int c = 0; c < D; ++c) {
    const bool in = live && c < s.d;
    qi[c] = in ? q[base + i * s.d + c] : T(0), go[c] = in ? gout[base + i * s.d + c] : T(0), dq[c] = T(0);
  }
  const T L = live ? lse[bh * s.T + i] : T(0), Di = live ? delta[bh * s.T + i] : T(0);
  for (int64_t j0 = 0; j0 < s.T; j0 += kTile) {
    __syncthreads();
    load_tile<T, D>(k + base, j0, s, ks);
    load_tile<T, D>(v + base, j0, s, vs);
    __syncthreads();
    if (!live) continue;
    for (int jj = 0; jj < kTile && j0 + jj < s.T; ++jj) {
      const int64_t j = j0 + jj;
      if (!mask[b * s.T + j]) continue;
      T sc = T(0), dpd = T(0);
      for (int c = 0; c < D; ++c) sc += qi[c] * ks[jj][c], dpd += go[c] * vs[jj][c];
      const T P = exp(sc * T(s.scale) - L);
      const T ds = P * (keep_factor<T>(s, bh, i, j) * dpd - Di);
      for (int c = 0; c < D; ++c) dq[c] += T(s.scale) * ds * ks[jj][c];
    }
  }
  if (!live) return;
  for (int c = 0; c < s.d; ++c) gq[base + i * s.d + c] = dq[c];
}

// The GEMM path (BERT's sizes): the scores of a head as one batched cuBLAS GEMM, then one block
// per row of scores for the masked softmax and dropout, as the CPU reference does. On an H100 the
// fused kernels above ran at 0.46x the op-by-op form at 32x8x128x64; this path holds [B*H, T, T]
// scores (three of them in the backward), so it is taken while they fit (attention_uses_gemms).

// Row r of the scores S: lse[r] (when compute_lse) and P = exp(S - lse) over the unmasked keys,
// 0 over the masked; with `dropped`, Pd = P * keep into it (else P itself is dropped in place).
template <typename T>
__global__ void attention_rows_kernel(T* S, const uint8_t* mask, AttnShape s, T* lse, bool compute_lse, T* dropped) {
  const int64_t r = blockIdx.x, b = r / (s.H * s.T);
  const uint8_t* keys = mask + b * s.T;
  T* row = S + r * s.T;
  if (compute_lse) {
    double m = -INFINITY;
    for (int64_t j = threadIdx.x; j < s.T; j += blockDim.x)
      if (keys[j]) m = fmax(m, static_cast<double>(row[j]));
    m = block_reduce<double, true>(m);
    double z = 0;
    for (int64_t j = threadIdx.x; j < s.T; j += blockDim.x)
      if (keys[j]) z += exp(static_cast<double>(row[j]) - m);
    z = block_reduce<double, false>(z);
    if (threadIdx.x == 0) lse[r] = static_cast<T>(m + log(z));
    __syncthreads();
  }
  const double L = static_cast<double>(lse[r]);
  for_row_keeps<T>(s, r, [&](int64_t j, T keep) {
    const T P = keys[j] ? static_cast<T>(exp(static_cast<double>(row[j]) - L)) : T(0);
    if (dropped) {
      row[j] = P;
      dropped[r * s.T + j] = P * keep;
    } else {
      row[j] = P * keep;
    }
  });
}

// G holds gPd (= gout v^T); becomes dS = P * (keep * gPd - D), D = sum_j Pd_j gPd_j (row r).
template <typename T>
__global__ void attention_dscores_kernel(const T* P, const T* Pd, T* G, AttnShape s) {
  const int64_t r = blockIdx.x;
  double D = 0;
  for (int64_t j = threadIdx.x; j < s.T; j += blockDim.x) D += static_cast<double>(Pd[r * s.T + j]) * G[r * s.T + j];
  D = block_reduce<double, false>(D);
  for_row_keeps<T>(s, r, [&](int64_t j, T keep) {
    G[r * s.T + j] = static_cast<T>(P[r * s.T + j] * (keep * static_cast<double>(G[r * s.T + j]) - D));
  });
}

// Threads per score row: a warp multiple, no more than the row needs (half of 256 idled at T = 128).
int row_threads(int64_t T) { return static_cast<int>(std::min<int64_t>(kThreads, (T + 31) / 32 * 32)); }

// alpha * op(a[bh]) op(b[bh]) for every head bh: the batched GEMM over the B*H heads.
GemmArgs head_gemm(int64_t heads, bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, int64_t sa,
                   int64_t sb, int64_t sc) {
  GemmArgs g;
  g.trans_a = ta, g.trans_b = tb, g.m = m, g.n = n, g.k = k, g.alpha = alpha, g.batch = heads;
  g.stride_a = sa, g.stride_b = sb, g.stride_c = sc;
  return g;
}

// Which CUDA path computes the attention. The batched GEMMs while their scores (three
// [B*H, T, T] in the backward) take at most 1 GiB; past that the fused kernels: for f32 tensors
// under precision = "bf16" or "tf32" the tensor-core ones (cuda_attention_tc.cu), else the
// per-thread ones (plain f32). SA_ATTENTION (read at each call: the tests run every path) forces
// one: "gemm", "fused" (the fused kernels, as above), "fused-simt" (the per-thread ones always).
enum class AttnPath { Gemms, TensorCores, PerThread };
struct AttnChoice {
  AttnPath path;
  TcOperands ops = TcOperands::Bf16;
};

AttnChoice attention_path(int64_t heads, int64_t T, const Tensor& q, bool tf32) {
  const char* e = std::getenv("SA_ATTENTION");
  const std::string forced = e ? e : "";
  if (forced == "fused-simt") return {AttnPath::PerThread};
  const bool fits = 3 * heads * T * T * static_cast<int64_t>(dtype_size(q.dtype())) <= (int64_t{1} << 30);
  if (forced == "gemm" || (forced != "fused" && fits)) return {AttnPath::Gemms};
  if (q.dtype() == DType::F32) {
    // bf16 wins over tf32, as in the GEMMs: gemm_operand makes both operands bf16.
    const TcOperands ops = bf16_matmuls() ? TcOperands::Bf16 : TcOperands::Tf32;
    if ((bf16_matmuls() || tf32) && attention_tc_supported(q.dim(3), ops)) return {AttnPath::TensorCores, ops};
  }
  return {AttnPath::PerThread};
}

// Calls f(std::integral_constant<int, D>) with the smallest supported capacity D >= d.
template <typename F>
void dispatch_head_dim(int64_t d, F&& f) {
  if (d <= 16) f(std::integral_constant<int, 16>{});
  else if (d <= 32) f(std::integral_constant<int, 32>{});
  else if (d <= 64) f(std::integral_constant<int, 64>{});
  else if (d <= 128) f(std::integral_constant<int, 128>{});
  else fail_message("attention: head dimension " + std::to_string(d) + " exceeds 128 on CUDA");
}

}  // namespace

void CudaBackend::attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& key_mask, double scale,
                            double p, uint64_t seed, uint64_t offset, Tensor& out, Tensor& lse) {
  if (p > 0) capture_refuse("attention's dropout offsets do not move on replay on the GPU");
  const int64_t B = q.dim(0), H = q.dim(1), T = q.dim(2), d = q.dim(3);
  if (B * H * T == 0) return;
  const AttnShape s{H, T, d, scale, p, seed, offset};
  const AttnChoice choice = attention_path(B * H, T, q, tf32_);
  const AttnPath path = choice.path;
  if (path == AttnPath::TensorCores)
    return attention_forward_tc(choice.ops, stream(), q.data<float>(), k.data<float>(), v.data<float>(), key_mask.data<uint8_t>(), s,
                                B * H, out.data<float>(), lse.data<float>());
  if (path == AttnPath::Gemms) {
    const int64_t BH = B * H, TT = T * T, Td = T * d;
    Tensor probs = Tensor::empty({BH, T, T}, q.dtype(), q.device());
    gemm(head_gemm(BH, false, true, T, T, d, scale, Td, Td, TT), gemm_operand(q), gemm_operand(k), probs);
    dispatch(q.dtype(), "attention", [&](auto tag) {
      using Tt = decltype(tag);
      attention_rows_kernel<Tt><<<static_cast<unsigned>(BH * T), row_threads(T), 0, stream()>>>(
          probs.data<Tt>(), key_mask.data<uint8_t>(), s, lse.data<Tt>(), true, nullptr);
    });
    CUDA_LAUNCHED("attention rows");
    gemm(head_gemm(BH, false, false, T, d, T, 1.0, TT, Td, Td), gemm_operand(probs), gemm_operand(v), out);
    return;
  }
  if (B * H > 65535) fail_message("attention: " + std::to_string(B * H) + " heads in a batch exceed CUDA's grid (65535)");
  const dim3 grid(static_cast<unsigned>((T + kRows - 1) / kRows), static_cast<unsigned>(B * H));
  dispatch(q.dtype(), "attention", [&](auto tag) {
    using Tt = decltype(tag);
    dispatch_head_dim(d, [&](auto D) {
      attention_forward_kernel<Tt, D><<<grid, kRows, 0, stream()>>>(q.data<Tt>(), k.data<Tt>(), v.data<Tt>(),
                                                                   key_mask.data<uint8_t>(), s, out.data<Tt>(),
                                                                   lse.data<Tt>());
    });
  });
  CUDA_LAUNCHED("attention");
}

void CudaBackend::attention_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& key_mask,
                                     double scale, double p, uint64_t seed, uint64_t offset, const Tensor& out,
                                     const Tensor& lse, const Tensor& gout, Tensor& gq, Tensor& gk, Tensor& gv) {
  if (p > 0) capture_refuse("attention's dropout offsets do not move on replay on the GPU");
  const int64_t B = q.dim(0), H = q.dim(1), T = q.dim(2), d = q.dim(3);
  if (B * H * T == 0) return;
  const AttnShape s{H, T, d, scale, p, seed, offset};
  const AttnChoice choice = attention_path(B * H, T, q, tf32_);
  const AttnPath path = choice.path;
  if (path == AttnPath::Gemms) {
    const int64_t BH = B * H, TT = T * T, Td = T * d;
    auto scratch = [&] { return Tensor::empty({BH, T, T}, q.dtype(), q.device()); };
    Tensor probs = scratch(), dropped = scratch(), gprobs = scratch();
    const Tensor qo = gemm_operand(q), ko = gemm_operand(k), go = gemm_operand(gout);
    gemm(head_gemm(BH, false, true, T, T, d, scale, Td, Td, TT), qo, ko, probs);
    dispatch(q.dtype(), "attention_backward", [&](auto tag) {
      using Tt = decltype(tag);
      attention_rows_kernel<Tt><<<static_cast<unsigned>(BH * T), row_threads(T), 0, stream()>>>(
          probs.data<Tt>(), key_mask.data<uint8_t>(), s, const_cast<Tt*>(lse.data<Tt>()), false, dropped.data<Tt>());
    });
    CUDA_LAUNCHED("attention_backward rows");
    gemm(head_gemm(BH, true, false, T, d, T, 1.0, TT, Td, Td), gemm_operand(dropped), go, gv);  // gv = Pd^T gout
    gemm(head_gemm(BH, false, true, T, T, d, 1.0, Td, Td, TT), go, gemm_operand(v), gprobs);    // gPd = gout v^T
    dispatch(q.dtype(), "attention_backward", [&](auto tag) {
      using Tt = decltype(tag);
      attention_dscores_kernel<Tt><<<static_cast<unsigned>(BH * T), row_threads(T), 0, stream()>>>(
          probs.data<Tt>(), dropped.data<Tt>(), gprobs.data<Tt>(), s);
    });
    CUDA_LAUNCHED("attention_backward scores");
    const Tensor dso = gemm_operand(gprobs);
    gemm(head_gemm(BH, false, false, T, d, T, scale, TT, Td, Td), dso, ko, gq);  // gq = scale dS k
    gemm(head_gemm(BH, true, false, T, d, T, scale, TT, Td, Td), dso, qo, gk);   // gk = scale dS^T q
    return;
  }
  const dim3 grid(static_cast<unsigned>((T + kRows - 1) / kRows), static_cast<unsigned>(B * H));
  Tensor delta = Tensor::empty({B * H * T}, q.dtype(), q.device());
  dispatch(q.dtype(), "attention_backward", [&](auto tag) {
    using Tt = decltype(tag);
    attention_delta_kernel<<<blocks_for(B * H * T), kThreads, 0, stream()>>>(out.data<Tt>(), gout.data<Tt>(), B * H * T,
                                                                           d, delta.data<Tt>());
  });
  CUDA_LAUNCHED("attention_backward delta");
  if (path == AttnPath::TensorCores)
    return attention_backward_tc(choice.ops, stream(), q.data<float>(), k.data<float>(), v.data<float>(), key_mask.data<uint8_t>(),
                                 lse.data<float>(), delta.data<float>(), gout.data<float>(), s, B * H, gq.data<float>(),
                                 gk.data<float>(), gv.data<float>());
  dispatch(q.dtype(), "attention_backward", [&](auto tag) {
    using Tt = decltype(tag);
    dispatch_head_dim(d, [&](auto D) {
      attention_dkdv_kernel<Tt, D><<<grid, kRows, 0, stream()>>>(q.data<Tt>(), k.data<Tt>(), v.data<Tt>(),
                                                                key_mask.data<uint8_t>(), lse.data<Tt>(),
                                                                delta.data<Tt>(), gout.data<Tt>(), s, gk.data<Tt>(),
                                                                gv.data<Tt>());
      CUDA_LAUNCHED("attention_backward dk dv");
      attention_dq_kernel<Tt, D><<<grid, kRows, 0, stream()>>>(q.data<Tt>(), k.data<Tt>(), v.data<Tt>(),
                                                              key_mask.data<uint8_t>(), lse.data<Tt>(), delta.data<Tt>(),
                                                              gout.data<Tt>(), s, gq.data<Tt>());
      CUDA_LAUNCHED("attention_backward dq");
    });
  });
}

}  // namespace sa
