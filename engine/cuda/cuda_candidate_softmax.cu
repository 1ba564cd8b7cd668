// CUDA: the candidate (sampled) softmax and SaELMo's selection in front of it, as cuBLAS GEMMs
// over chunks of candidates with small epilogue kernels. The [N, S] logits never exist at once:
// each chunk's [N, C] tile (sized to stay in L2) is folded into a running max and sum per row
// (online log-sum-exp) in the forward, and turned in place into g * softmax in the backward, which
// recomputes it. A one-block-per-row kernel with scalar dot products ran 90x behind one GEMM.
#include <algorithm>

#include "engine/core/scalar_math.h"
#include "engine/core/precision.h"
#include "engine/cuda/cuda_backend.cuh"

namespace sa {
using namespace cudak;

namespace {

constexpr int kWarpsPerBlock = 8;

// Candidates per chunk: the chunk's [N, C] logits stay near 32 MB, inside an H100's 50 MB L2, so
// the epilogue reads what the GEMM just wrote from cache. A multiple of 128 keeps the GEMM's tiles
// whole.
int64_t chunk_columns(int64_t N, int64_t S, size_t elt) {
  const int64_t fit = (int64_t{32} << 20) / (std::max<int64_t>(N, 1) * static_cast<int64_t>(elt));
  return std::min(S, std::max<int64_t>(128, fit / 128 * 128));
}

template <typename T>
__device__ bool is_own(const int32_t* oid, int64_t n, int64_t H, int32_t id) {
  for (int64_t h = 0; h < H; ++h)
    if (oid[n * H + h] == id) return true;
  return false;
}

// Folds (m2, s2) into the running (m, s) of a log-sum-exp: sum = s * exp(m) (s = 0 when empty).
template <typename T>
__device__ void lse_merge(T& m, T& s, T m2, T s2) {
  if (s2 == T(0)) return;
  if (s == T(0)) {
    m = m2, s = s2;
  } else if (m2 > m) {
    s = s * math::exp(m - m2) + s2, m = m2;
  } else {
    s += s2 * math::exp(m2 - m);
  }
}

// t[n, h] = x_n . wt[n, h] + bt[n, h] (-inf when own id is -1): one warp per (n, h).
template <typename T>
__global__ void own_logits_kernel(const T* x, const T* wt, const T* bt, const int32_t* oid, T* t, int64_t N,
                                  int64_t H, int64_t P) {
  const int64_t i = blockIdx.x * int64_t(kWarpsPerBlock) + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (i >= N * H) return;
  const T* xr = x + (i / H) * P;
  const T* wr = wt + i * P;
  T acc = 0;
  for (int64_t k = lane; k < P; k += 32) acc += xr[k] * wr[k];
  acc = warp_sum(acc);
  if (lane == 0) t[i] = oid[i] < 0 ? T(-INFINITY) : acc + bt[i];
}

// The running log-sum-exp of each row starts from its present own logits.
template <typename T>
__global__ void lse_start_kernel(const T* t, T* m, T* s, int64_t N, int64_t H) {
  CUDA_LOOP(n, N) {
    T mm = 0, ss = 0;
    for (int64_t h = 0; h < H; ++h)
      if (t[n * H + h] != T(-INFINITY)) lse_merge(mm, ss, t[n * H + h], T(1));
    m[n] = mm, s[n] = ss;
  }
}

// Folds one chunk's logits L [N, C] (without bias) into (m, s): one warp per row.
template <typename T>
__global__ void lse_chunk_kernel(const T* L, const T* bc, const int32_t* cid, const int32_t* oid, T* m, T* s,
                                 int64_t N, int64_t C, int64_t H) {
  const int64_t n = blockIdx.x * int64_t(kWarpsPerBlock) + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (n >= N) return;
  T mm = 0, ss = 0;
  for (int64_t j = lane; j < C; j += 32)
    if (!is_own<T>(oid, n, H, cid[j])) lse_merge(mm, ss, L[n * C + j] + bc[j], T(1));
  for (int o = 16; o > 0; o >>= 1) {
    const T m2 = __shfl_xor_sync(0xffffffffu, mm, o), s2 = __shfl_xor_sync(0xffffffffu, ss, o);
    lse_merge(mm, ss, m2, s2);
  }
  if (lane == 0) {
    T rm = m[n], rs = s[n];
    lse_merge(rm, rs, mm, ss);
    m[n] = rm, s[n] = rs;
  }
}

// lse = m + log s; loss = lse - sum_h w_nh t_nh over the present own rows.
template <typename T>
__global__ void lse_finish_kernel(const T* m, const T* s, const T* t, const int32_t* oid, const T* w, T* loss,
                                  T* lse, int64_t N, int64_t H) {
  CUDA_LOOP(n, N) {
    const T total = m[n] + math::log(s[n]);
    T target = 0;
    for (int64_t h = 0; h < H; ++h)
      if (oid[n * H + h] >= 0) target += w[n * H + h] * t[n * H + h];
    lse[n] = total;
    loss[n] = total - target;
  }
}

// In place: L[n, j] (a chunk's logits without bias) -> g_n * p_nj, 0 for accidental hits.
template <typename T>
__global__ void softmax_grad_chunk_kernel(T* L, const T* bc, const int32_t* cid, const int32_t* oid, const T* lse,
                                          const T* gl, int64_t N, int64_t C, int64_t H) {
  CUDA_LOOP(i, N * C) {
    const int64_t n = i / C, j = i % C;
    L[i] = is_own<T>(oid, n, H, cid[j]) ? T(0) : gl[n] * math::exp(L[i] + bc[j] - lse[n]);
  }
}

// dt[n, h] = g_n * (p_nh - w_nh), 0 when absent.
template <typename T>
__global__ void own_grad_kernel(const T* t, const int32_t* oid, const T* w, const T* lse, const T* gl, T* dt,
                                int64_t N, int64_t H) {
  CUDA_LOOP(i, N * H) {
    const int64_t n = i / H;
    dt[i] = oid[i] < 0 ? T(0) : gl[n] * (math::exp(t[i] - lse[n]) - w[i]);
  }
}

// gx[n] += sum_h dt[n, h] * wt[n, h]; gwt[n, h] = dt[n, h] * x[n]
template <typename T>
__global__ void own_rows_grads_kernel(const T* x, const T* wt, const T* dt, T* gx, T* gwt, int64_t N, int64_t P,
                                      int64_t H) {
  CUDA_LOOP(i, N * P) {
    const int64_t n = i / P, k = i % P;
    T acc = 0;
    for (int64_t h = 0; h < H; ++h) {
      const T d = dt[n * H + h];
      acc += d * wt[(n * H + h) * P + k];
      gwt[(n * H + h) * P + k] = d * x[i];
    }
    gx[i] += acc;
  }
}

unsigned warp_blocks(int64_t rows) { return static_cast<unsigned>((rows + kWarpsPerBlock - 1) / kWarpsPerBlock); }

}  // namespace

void CudaBackend::candidate_softmax(const Tensor& x, const Tensor& wt, const Tensor& bt, const Tensor& Wc,
                                    const Tensor& bc, const Tensor& own_ids, const Tensor& cand_ids,
                                    const Tensor& own_w, Tensor& loss, Tensor& lse, Tensor* /*logp: not kept on CUDA*/) {
  const int64_t N = x.dim(0), P = x.dim(1), S = Wc.dim(0);
  if (N == 0) return;
  const int64_t H = own_ids.numel() / N, C = chunk_columns(N, S, dtype_size(x.dtype()));
  Tensor t = Tensor::empty({N, H}, x.dtype(), x.device()), m = Tensor::empty({N}, x.dtype(), x.device());
  Tensor s = Tensor::empty({N}, x.dtype(), x.device());
  Tensor L = Tensor::empty({N, std::max<int64_t>(C, 1)}, x.dtype(), x.device());
  const Tensor bcol = bc.view({S, 1});
  // precision = "bf16": the logits' product rounds x and Wc, as ops::matmul does in the unfused form
  const Tensor xo = gemm_operand(x), Wco = gemm_operand(Wc);
  dispatch(x.dtype(), "candidate_softmax", [&](auto tag) {
    using T = decltype(tag);
    own_logits_kernel<<<warp_blocks(N * H), 32 * kWarpsPerBlock, 0, stream()>>>(
        x.data<T>(), wt.data<T>(), bt.data<T>(), own_ids.data<int32_t>(), t.data<T>(), N, H, P);
    CUDA_LAUNCHED("candidate_softmax own logits");
    lse_start_kernel<<<blocks_for(N), kThreads, 0, stream()>>>(t.data<T>(), m.data<T>(), s.data<T>(), N, H);
    CUDA_LAUNCHED("candidate_softmax lse start");
    for (int64_t c0 = 0; c0 < S; c0 += C) {
      const int64_t c1 = std::min(S, c0 + C), w = c1 - c0;
      Tensor tile = L.view({N * C}).rows(0, N * w).view({N, w});
      GemmArgs g;  // tile = x Wc[c0:c1]^T
      g.trans_b = true, g.m = N, g.n = w, g.k = P;
      gemm(g, xo, Wco.rows(c0, c1), tile);
      lse_chunk_kernel<<<warp_blocks(N), 32 * kWarpsPerBlock, 0, stream()>>>(
          tile.data<T>(), bcol.rows(c0, c1).data<T>(), cand_ids.data<int32_t>() + c0, own_ids.data<int32_t>(),
          m.data<T>(), s.data<T>(), N, w, H);
      CUDA_LAUNCHED("candidate_softmax lse chunk");
    }
    lse_finish_kernel<<<blocks_for(N), kThreads, 0, stream()>>>(m.data<T>(), s.data<T>(), t.data<T>(),
                                                               own_ids.data<int32_t>(), own_w.data<T>(),
                                                               loss.data<T>(), lse.data<T>(), N, H);
    CUDA_LAUNCHED("candidate_softmax lse finish");
  });
}

void CudaBackend::candidate_softmax_backward(const Tensor& x, const Tensor& wt, const Tensor& bt, const Tensor& Wc,
                                             const Tensor& bc, const Tensor& own_ids, const Tensor& cand_ids,
                                             const Tensor& own_w, const Tensor& lse, const Tensor& gloss, Tensor& gx,
                                             Tensor& gwt, Tensor& gbt, Tensor& gWc, Tensor& gbc, Tensor*) {
  const int64_t N = x.dim(0), P = x.dim(1), S = Wc.dim(0);
  if (S == 0 || N == 0) {  // otherwise the chunks' GEMMs write them
    fill(gWc, 0);
    fill(gbc, 0);
    fill(gx, 0);
  }
  if (N == 0) return;
  const int64_t H = own_ids.numel() / N, C = chunk_columns(N, S, dtype_size(x.dtype()));
  Tensor t = Tensor::empty({N, H}, x.dtype(), x.device());
  Tensor L = Tensor::empty({N, std::max<int64_t>(C, 1)}, x.dtype(), x.device());
  const Tensor ones = Tensor::full({N, 1}, 1.0, x.dtype(), x.device());
  const Tensor bcol = bc.view({S, 1});
  Tensor gbcol = gbc.view({S, 1});
  const Tensor xo = gemm_operand(x), Wco = gemm_operand(Wc);  // as the forward's product
  dispatch(x.dtype(), "candidate_softmax_backward", [&](auto tag) {
    using T = decltype(tag);
    for (int64_t c0 = 0; c0 < S; c0 += C) {
      const int64_t c1 = std::min(S, c0 + C), w = c1 - c0;
      Tensor tile = L.view({N * C}).rows(0, N * w).view({N, w});
      const Tensor Wchunk = Wco.rows(c0, c1);
      GemmArgs g;  // tile = x Wc[c0:c1]^T, the forward's logits again
      g.trans_b = true, g.m = N, g.n = w, g.k = P;
      gemm(g, xo, Wchunk, tile);
      softmax_grad_chunk_kernel<<<blocks_for(N * w), kThreads, 0, stream()>>>(
          tile.data<T>(), bcol.rows(c0, c1).data<T>(), cand_ids.data<int32_t>() + c0, own_ids.data<int32_t>(),
          lse.data<T>(), gloss.data<T>(), N, w, H);
      CUDA_LAUNCHED("candidate_softmax grad chunk");
      const Tensor dL = gemm_operand(tile);  // as the products take it (the bias's below: f32)
      GemmArgs gxa;  // gx (+)= dL Wc[c0:c1]
      gxa.m = N, gxa.n = P, gxa.k = w, gxa.beta = c0 == 0 ? 0.0 : 1.0;
      gemm(gxa, dL, Wchunk, gx);
      GemmArgs gwa;  // gWc[c0:c1] = dL^T x
      gwa.trans_a = true, gwa.m = w, gwa.n = P, gwa.k = N;
      Tensor gW = gWc.rows(c0, c1);
      gemm(gwa, dL, xo, gW);
      GemmArgs gba;  // gbc[c0:c1] = dL^T 1
      gba.trans_a = true, gba.m = w, gba.n = 1, gba.k = N;
      Tensor gb = gbcol.rows(c0, c1);
      gemm(gba, tile, ones, gb);
    }
    own_logits_kernel<<<warp_blocks(N * H), 32 * kWarpsPerBlock, 0, stream()>>>(
        x.data<T>(), wt.data<T>(), bt.data<T>(), own_ids.data<int32_t>(), t.data<T>(), N, H, P);
    CUDA_LAUNCHED("candidate_softmax own logits");
    own_grad_kernel<<<blocks_for(N * H), kThreads, 0, stream()>>>(t.data<T>(), own_ids.data<int32_t>(),
                                                                 own_w.data<T>(), lse.data<T>(), gloss.data<T>(),
                                                                 gbt.data<T>(), N, H);
    CUDA_LAUNCHED("candidate_softmax own grad");
    own_rows_grads_kernel<<<blocks_for(N * P), kThreads, 0, stream()>>>(x.data<T>(), wt.data<T>(), gbt.data<T>(),
                                                                       gx.data<T>(), gwt.data<T>(), N, P, H);
    CUDA_LAUNCHED("candidate_softmax own rows grads");
  });
}

// Selection first (its own kernel: a thread per token), then the candidate softmax with each
// token's selected row, gathered from the table, as its one own row.
void CudaBackend::select_candidate_softmax(const Tensor& x, const Tensor& W, const Tensor& b, const Tensor& u,
                                           const Tensor& v, const Tensor& rows, const Tensor& enabled,
                                           const Tensor& Wc, const Tensor& bc, const Tensor& cand_ids, Tensor& loss,
                                           Tensor& lse, Tensor& selected) {
  const int64_t N = x.dim(0), P = x.dim(1);
  if (N == 0) return;
  select_rows(u, v, rows, enabled, selected);
  Tensor wt = Tensor::empty({N, P}, x.dtype(), x.device()), bt = Tensor::empty({N, 1}, x.dtype(), x.device());
  gather_rows(W, selected, wt);
  gather_rows(b, selected, bt);
  const Tensor ones = Tensor::full({N}, 1.0, x.dtype(), x.device());
  candidate_softmax(x, wt, bt, Wc, bc, selected, cand_ids, ones, loss, lse);
}

}  // namespace sa
