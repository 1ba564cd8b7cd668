// CUDA: layer norm, the fused LSTM-cell and highway kernels, Adagrad, the candidate softmax and
// sense selection.
#include "engine/core/scalar_math.h"
#include "engine/cuda/cuda_backend.cuh"

namespace sa {
using namespace cudak;

constexpr int kRowThreads = 256;

template <typename T>
__global__ void layer_norm_kernel(const T* x, const T* gamma, const T* beta, T eps, T* y, T* mean, T* rstd, int64_t d) {
  const T* xr = x + blockIdx.x * d;
  T s = 0;
  for (int64_t k = threadIdx.x; k < d; k += blockDim.x) s += xr[k];
  T m = block_reduce<T, false>(s) / T(d);
  T v = 0;
  for (int64_t k = threadIdx.x; k < d; k += blockDim.x) v += (xr[k] - m) * (xr[k] - m);
  T r = T(1) / math::sqrt(block_reduce<T, false>(v) / T(d) + eps);
  for (int64_t k = threadIdx.x; k < d; k += blockDim.x) y[blockIdx.x * d + k] = (xr[k] - m) * r * gamma[k] + beta[k];
  if (threadIdx.x == 0) {
    mean[blockIdx.x] = m;
    rstd[blockIdx.x] = r;
  }
}

void CudaBackend::layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps, Tensor& y,
                             Tensor& mean, Tensor& rstd) {
  const int64_t d = x.dim(-1), rows = x.numel() / d;
  if (rows == 0) return;
  dispatch(x.dtype(), "layer_norm", [&](auto tag) {
    using T = decltype(tag);
    layer_norm_kernel<<<rows, kRowThreads, 0, stream_>>>(x.data<T>(), gamma.data<T>(), beta.data<T>(), T(eps),
                                                         y.data<T>(), mean.data<T>(), rstd.data<T>(), d);
  });
  CUDA_LAUNCHED("layer_norm");
}

template <typename T>
__global__ void layer_norm_gx_kernel(const T* x, const T* gamma, const T* mean, const T* rstd, const T* gy, T* gx,
                                     int64_t d) {
  const int64_t r = blockIdx.x;
  T s1 = 0, s2 = 0;
  for (int64_t k = threadIdx.x; k < d; k += blockDim.x) {
    T xh = (x[r * d + k] - mean[r]) * rstd[r], gg = gy[r * d + k] * gamma[k];
    s1 += gg;
    s2 += gg * xh;
  }
  s1 = block_reduce<T, false>(s1) / T(d);
  s2 = block_reduce<T, false>(s2) / T(d);
  for (int64_t k = threadIdx.x; k < d; k += blockDim.x) {
    T xh = (x[r * d + k] - mean[r]) * rstd[r];
    gx[r * d + k] = rstd[r] * (gy[r * d + k] * gamma[k] - s1 - xh * s2);
  }
}

template <typename T>
__global__ void layer_norm_gparams_kernel(const T* x, const T* mean, const T* rstd, const T* gy, T* gg, T* gb,
                                          int64_t rows, int64_t d) {
  CUDA_LOOP(k, d) {
    T a = 0, b = 0;
    for (int64_t r = 0; r < rows; ++r) {
      a += gy[r * d + k] * (x[r * d + k] - mean[r]) * rstd[r];
      b += gy[r * d + k];
    }
    if (gg) gg[k] = a;
    if (gb) gb[k] = b;
  }
}

void CudaBackend::layer_norm_backward(const Tensor& x, const Tensor& gamma, const Tensor& mean, const Tensor& rstd,
                                      const Tensor& gy, Tensor* gx, Tensor* ggamma, Tensor* gbeta) {
  const int64_t d = x.dim(-1), rows = x.numel() / d;
  if (rows == 0) return;
  dispatch(x.dtype(), "layer_norm_backward", [&](auto tag) {
    using T = decltype(tag);
    if (gx)
      layer_norm_gx_kernel<<<rows, kRowThreads, 0, stream_>>>(x.data<T>(), gamma.data<T>(), mean.data<T>(),
                                                              rstd.data<T>(), gy.data<T>(), gx->data<T>(), d);
    if (ggamma || gbeta)
      layer_norm_gparams_kernel<<<blocks_for(d), kThreads, 0, stream_>>>(
          x.data<T>(), mean.data<T>(), rstd.data<T>(), gy.data<T>(), ggamma ? ggamma->data<T>() : nullptr,
          gbeta ? gbeta->data<T>() : nullptr, rows, d);
  });
  CUDA_LAUNCHED("layer_norm_backward");
}

template <typename T>
__global__ void lstm_cell_kernel(const T* gates, const T* c_prev, T fb, T clip, T* c, T* h, int64_t N, int64_t H) {
  CUDA_LOOP(e, N * H) {
    int64_t n = e / H, k = e % H;
    const T* g = gates + n * 4 * H + k;
    auto a = math::lstm_gates<T>(g[0], g[H], g[2 * H], g[3 * H], c_prev[e], fb);
    T cc = math::clip_cell<T>(a.c_raw, clip);
    c[e] = cc;
    h[e] = a.o * math::tanh(cc);
  }
}

void CudaBackend::lstm_cell(const Tensor& gates, const Tensor& c_prev, double forget_bias, double cell_clip, Tensor& c,
                            Tensor& h) {
  const int64_t H = c_prev.dim(-1), N = c_prev.numel() / H;
  if (N * H == 0) return;
  dispatch(gates.dtype(), "lstm_cell", [&](auto tag) {
    using T = decltype(tag);
    lstm_cell_kernel<<<blocks_for(N * H), kThreads, 0, stream_>>>(gates.data<T>(), c_prev.data<T>(), T(forget_bias),
                                                                  T(cell_clip), c.data<T>(), h.data<T>(), N, H);
  });
  CUDA_LAUNCHED("lstm_cell");
}

template <typename T>
__global__ void lstm_cell_backward_kernel(const T* gates, const T* c_prev, const T* c, T fb, T clip, const T* gc,
                                          const T* gh, T* gg, T* gcp, int64_t N, int64_t H) {
  CUDA_LOOP(e, N * H) {
    int64_t n = e / H, k = e % H;
    const T* g = gates + n * 4 * H + k;
    auto d = math::lstm_cell_grads<T>(g[0], g[H], g[2 * H], g[3 * H], c_prev[e], c[e], fb, clip, gc ? gc[e] : T(0),
                                      gh ? gh[e] : T(0));
    T* out = gg + n * 4 * H + k;
    out[0] = d.di, out[H] = d.dj, out[2 * H] = d.df, out[3 * H] = d.do_;
    if (gcp) gcp[e] = d.dc_prev;
  }
}

void CudaBackend::lstm_cell_backward(const Tensor& gates, const Tensor& c_prev, const Tensor& c, double forget_bias,
                                     double cell_clip, const Tensor* gc, const Tensor* gh, Tensor& ggates,
                                     Tensor* gc_prev) {
  const int64_t H = c_prev.dim(-1), N = c_prev.numel() / H;
  if (N * H == 0) return;
  dispatch(gates.dtype(), "lstm_cell_backward", [&](auto tag) {
    using T = decltype(tag);
    lstm_cell_backward_kernel<<<blocks_for(N * H), kThreads, 0, stream_>>>(
        gates.data<T>(), c_prev.data<T>(), c.data<T>(), T(forget_bias), T(cell_clip), gc ? gc->data<T>() : nullptr,
        gh ? gh->data<T>() : nullptr, ggates.data<T>(), gc_prev ? gc_prev->data<T>() : nullptr, N, H);
  });
  CUDA_LAUNCHED("lstm_cell_backward");
}

template <typename T>
__global__ void highway_kernel(const T* a, const T* b, const T* x, T* y, int64_t n) {
  CUDA_LOOP(i, n) y[i] = math::highway(a[i], b[i], x[i]);
}

void CudaBackend::highway(const Tensor& carry, const Tensor& transform, const Tensor& x, Tensor& y) {
  const int64_t n = x.numel();
  if (n == 0) return;
  dispatch(x.dtype(), "highway", [&](auto tag) {
    using T = decltype(tag);
    highway_kernel<<<blocks_for(n), kThreads, 0, stream_>>>(carry.data<T>(), transform.data<T>(), x.data<T>(),
                                                            y.data<T>(), n);
  });
  CUDA_LAUNCHED("highway");
}

template <typename T>
__global__ void highway_backward_kernel(const T* a, const T* b, const T* x, const T* gy, T* ga, T* gb, T* gx,
                                        int64_t n) {
  CUDA_LOOP(i, n) {
    auto d = math::highway_grads(a[i], b[i], x[i], gy[i]);
    ga[i] = d.dcarry, gb[i] = d.dtransform, gx[i] = d.dx;
  }
}

void CudaBackend::highway_backward(const Tensor& carry, const Tensor& transform, const Tensor& x, const Tensor& gy,
                                   Tensor& gcarry, Tensor& gtransform, Tensor& gx) {
  const int64_t n = x.numel();
  if (n == 0) return;
  dispatch(x.dtype(), "highway_backward", [&](auto tag) {
    using T = decltype(tag);
    highway_backward_kernel<<<blocks_for(n), kThreads, 0, stream_>>>(carry.data<T>(), transform.data<T>(), x.data<T>(),
                                                                     gy.data<T>(), gcarry.data<T>(),
                                                                     gtransform.data<T>(), gx.data<T>(), n);
  });
  CUDA_LAUNCHED("highway_backward");
}

template <typename T>
__global__ void adagrad_kernel(T* w, T* acc, const T* g, int64_t n, T lr) {
  CUDA_LOOP(i, n) w[i] = math::adagrad(w[i], acc[i], g[i], lr);
}

void CudaBackend::adagrad(Tensor& w, Tensor& acc, const Tensor& g, double lr) {
  const int64_t n = w.numel();
  if (n == 0) return;
  dispatch(w.dtype(), "adagrad", [&](auto tag) {
    using T = decltype(tag);
    adagrad_kernel<<<blocks_for(n), kThreads, 0, stream_>>>(w.data<T>(), acc.data<T>(), g.data<T>(), n, T(lr));
  });
  CUDA_LAUNCHED("adagrad");
}

// Rows are unique, so no two threads touch one element.
template <typename T>
__global__ void adagrad_rows_kernel(T* w, T* acc, const int32_t* ids, const T* g, int64_t n, int64_t d, int64_t v,
                                    T lr) {
  CUDA_LOOP(e, n * d) {
    int64_t i = e / d, c = e % d;
    int32_t r = ids[i];
    if (r >= 0 && r < v) w[r * d + c] = math::adagrad(w[r * d + c], acc[r * d + c], g[e], lr);
  }
}

void CudaBackend::adagrad_rows(Tensor& w, Tensor& acc, const Tensor& ids, const Tensor& g, double lr) {
  const int64_t v = w.dim(0), d = w.numel() / std::max<int64_t>(v, 1), n = ids.numel();
  if (n * d == 0) return;
  dispatch(w.dtype(), "adagrad_rows", [&](auto tag) {
    using T = decltype(tag);
    adagrad_rows_kernel<<<blocks_for(n * d), kThreads, 0, stream_>>>(w.data<T>(), acc.data<T>(), ids.data<int32_t>(),
                                                                     g.data<T>(), n, d, v, T(lr));
  });
  CUDA_LAUNCHED("adagrad_rows");
}

}  // namespace sa

// ---- candidate softmax: one block per row, x in shared memory, a streaming log-sum-exp over the
// candidates (each thread keeps a running max and sum; the block merges them), so the forward
// never writes the [N, S] logits. The backward writes g * softmax into an [N, S] scratch (as
// llm.c's classifier reuses its logits) and leaves the products to cuBLAS.

namespace sa {
using namespace cudak;

template <typename T>
__device__ T candidate_logit(const T* xs, const T* w, T bias, int64_t P) {
  T l = bias;
  for (int64_t k = 0; k < P; ++k) l += xs[k] * w[k];
  return l;
}

// Row n of x into shared memory (xs) and its H own logits into ts (-inf when absent; every thread
// reads them after the call).
template <typename T>
__device__ void load_row_and_own_logits(const T* x, const T* wt, const T* bt, const int32_t* oid, int64_t n,
                                        int64_t P, int64_t H, T* xs, T* ts) {
  for (int64_t k = threadIdx.x; k < P; k += blockDim.x) xs[k] = x[n * P + k];
  __syncthreads();
  for (int64_t h = 0; h < H; ++h) {
    T t = 0;
    for (int64_t k = threadIdx.x; k < P; k += blockDim.x) t += xs[k] * wt[(n * H + h) * P + k];
    t = block_reduce<T, false>(t);
    if (threadIdx.x == 0) ts[h] = oid[n * H + h] < 0 ? T(-INFINITY) : t + bt[n * H + h];
  }
  __syncthreads();
}

template <typename T>
__device__ bool is_own(const int32_t* oid, int64_t n, int64_t H, int32_t id) {
  for (int64_t h = 0; h < H; ++h)
    if (oid[n * H + h] == id) return true;
  return false;
}

// The block's log-sum-exp over the running (max m, sum s) each thread brings (its share of the own
// logits) and the candidates j it visits, except those `skip(cand_ids[j])` (accidental hits).
// Every thread of the block must call it; all get the result.
template <typename T, typename Skip>
__device__ T candidates_logsumexp(const T* xs, const T* Wc, const T* bc, const int32_t* cid, int64_t P, int64_t S,
                                  T m, T s, Skip skip) {
  for (int64_t j = threadIdx.x; j < S; j += blockDim.x) {
    if (skip(cid[j])) continue;
    const T l = candidate_logit(xs, Wc + j * P, bc[j], P);
    if (l > m) s = s * math::exp(m - l) + T(1), m = l;
    else s += math::exp(l - m);
  }
  const T M = block_reduce<T, true>(m);
  const T sum = block_reduce<T, false>(m == T(-INFINITY) ? T(0) : s * math::exp(m - M));
  return M + math::log(sum);
}

template <typename T>
__global__ void candidate_softmax_kernel(const T* x, const T* wt, const T* bt, const T* Wc, const T* bc,
                                         const int32_t* oid, const int32_t* cid, const T* w, T* loss, T* lse,
                                         int64_t P, int64_t S, int64_t H) {
  extern __shared__ unsigned char smem[];
  T* xs = reinterpret_cast<T*>(smem);
  T* ts = xs + P;
  const int64_t n = blockIdx.x;
  load_row_and_own_logits(x, wt, bt, oid, n, P, H, xs, ts);
  T m = T(-INFINITY), s = T(0);
  if (threadIdx.x == 0)
    for (int64_t h = 0; h < H; ++h) {
      const T l = ts[h];
      if (l == T(-INFINITY)) continue;
      if (l > m) s = s * math::exp(m - l) + T(1), m = l;
      else s += math::exp(l - m);
    }
  const T total = candidates_logsumexp(xs, Wc, bc, cid, P, S, m, s, [&](int32_t id) { return is_own<T>(oid, n, H, id); });
  if (threadIdx.x == 0) {
    T target = 0;
    for (int64_t h = 0; h < H; ++h)
      if (oid[n * H + h] >= 0) target += w[n * H + h] * ts[h];
    lse[n] = total;
    loss[n] = total - target;
  }
}

void CudaBackend::candidate_softmax(const Tensor& x, const Tensor& wt, const Tensor& bt, const Tensor& Wc,
                                    const Tensor& bc, const Tensor& own_ids, const Tensor& cand_ids,
                                    const Tensor& own_w, Tensor& loss, Tensor& lse) {
  const int64_t N = x.dim(0), P = x.dim(1), S = Wc.dim(0);
  if (N == 0) return;
  const int64_t H = own_ids.numel() / N;
  dispatch(x.dtype(), "candidate_softmax", [&](auto tag) {
    using T = decltype(tag);
    candidate_softmax_kernel<<<N, kRowThreads, (P + H) * sizeof(T), stream_>>>(
        x.data<T>(), wt.data<T>(), bt.data<T>(), Wc.data<T>(), bc.data<T>(), own_ids.data<int32_t>(),
        cand_ids.data<int32_t>(), own_w.data<T>(), loss.data<T>(), lse.data<T>(), P, S, H);
  });
  CUDA_LAUNCHED("candidate_softmax");
}

// dL[n, s] = g_n * p_ns (0 for accidental hits); dt[n, h] = g_n * (p_nh - w_nh) (0 when absent).
template <typename T>
__global__ void candidate_softmax_grad_kernel(const T* x, const T* wt, const T* bt, const T* Wc, const T* bc,
                                              const int32_t* oid, const int32_t* cid, const T* w, const T* lse,
                                              const T* gl, T* dL, T* dt, int64_t P, int64_t S, int64_t H) {
  extern __shared__ unsigned char smem[];
  T* xs = reinterpret_cast<T*>(smem);
  T* ts = xs + P;
  const int64_t n = blockIdx.x;
  load_row_and_own_logits(x, wt, bt, oid, n, P, H, xs, ts);
  for (int64_t j = threadIdx.x; j < S; j += blockDim.x)
    dL[n * S + j] = is_own<T>(oid, n, H, cid[j]) ? T(0)
                                                 : gl[n] * math::exp(candidate_logit(xs, Wc + j * P, bc[j], P) - lse[n]);
  for (int64_t h = threadIdx.x; h < H; h += blockDim.x)
    dt[n * H + h] = oid[n * H + h] < 0 ? T(0) : gl[n] * (math::exp(ts[h] - lse[n]) - w[n * H + h]);
}

// gx[n] += sum_h dt[n, h] * wt[n, h]; gwt[n, h] = dt[n, h] * x[n]
template <typename T>
__global__ void candidate_own_grads_kernel(const T* x, const T* wt, const T* dt, T* gx, T* gwt, int64_t N, int64_t P,
                                           int64_t H) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < N * P; i += int64_t(gridDim.x) * blockDim.x) {
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

// gbc[s] = sum_n dL[n, s]
template <typename T>
__global__ void column_sums_kernel(const T* dL, T* out, int64_t N, int64_t S) {
  const int64_t s = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (s >= S) return;
  T acc = 0;
  for (int64_t n = 0; n < N; ++n) acc += dL[n * S + s];
  out[s] = acc;
}

void CudaBackend::candidate_softmax_backward(const Tensor& x, const Tensor& wt, const Tensor& bt, const Tensor& Wc,
                                             const Tensor& bc, const Tensor& own_ids, const Tensor& cand_ids,
                                             const Tensor& own_w, const Tensor& lse, const Tensor& gloss, Tensor& gx,
                                             Tensor& gwt, Tensor& gbt, Tensor& gWc, Tensor& gbc) {
  const int64_t N = x.dim(0), P = x.dim(1), S = Wc.dim(0);
  if (S == 0 || N == 0) {  // otherwise the GEMMs and the column sums overwrite them
    fill(gWc, 0);
    fill(gbc, 0);
    fill(gx, 0);
  }
  if (N == 0) return;
  const int64_t H = own_ids.numel() / N;
  Tensor dL = Tensor::empty({N, std::max<int64_t>(S, 1)}, x.dtype(), x.device());
  dispatch(x.dtype(), "candidate_softmax_backward", [&](auto tag) {
    using T = decltype(tag);
    candidate_softmax_grad_kernel<<<N, kRowThreads, (P + H) * sizeof(T), stream_>>>(
        x.data<T>(), wt.data<T>(), bt.data<T>(), Wc.data<T>(), bc.data<T>(), own_ids.data<int32_t>(),
        cand_ids.data<int32_t>(), own_w.data<T>(), lse.data<T>(), gloss.data<T>(), dL.data<T>(), gbt.data<T>(), P, S,
        H);
    CUDA_LAUNCHED("candidate_softmax_grad");
    if (S > 0) {
      GemmArgs g;  // gx = dL @ Wc
      g.m = N, g.n = P, g.k = S;
      gemm(g, dL, Wc, gx);
      GemmArgs gw;  // gWc = dL^T @ x
      gw.trans_a = true, gw.m = S, gw.n = P, gw.k = N;
      gemm(gw, dL, x, gWc);
      column_sums_kernel<<<(S + 255) / 256, 256, 0, stream_>>>(dL.data<T>(), gbc.data<T>(), N, S);
      CUDA_LAUNCHED("candidate_softmax_column_sums");
    }
    const int64_t blocks = std::min<int64_t>((N * P + 255) / 256, 4096);
    candidate_own_grads_kernel<<<blocks, 256, 0, stream_>>>(x.data<T>(), wt.data<T>(), gbt.data<T>(), gx.data<T>(),
                                                            gwt.data<T>(), N, P, H);
    CUDA_LAUNCHED("candidate_softmax_own_grads");
  });
}

// ---- sense selection: one thread per token (K <= 8 candidates of d = 16 dims: too small to split).
template <typename T>
__global__ void select_rows_kernel(const T* u, const T* v, const int32_t* rows, const uint8_t* enabled, int32_t* out,
                                   int64_t N, int64_t K, int64_t d) {
  CUDA_LOOP(n, N) out[n] = rows[n * K + math::select_by_cosine(u + n * d, v + n * K * d, enabled + n * K, K, d)];
}

void CudaBackend::select_rows(const Tensor& u, const Tensor& v, const Tensor& rows, const Tensor& enabled,
                              Tensor& out) {
  const int64_t N = u.dim(0), d = u.dim(1), K = N ? rows.numel() / N : 0;
  if (N == 0) return;
  dispatch(u.dtype(), "select_rows", [&](auto tag) {
    using T = decltype(tag);
    select_rows_kernel<<<blocks_for(N), kThreads, 0, stream_>>>(u.data<T>(), v.data<T>(), rows.data<int32_t>(),
                                                                enabled.data<uint8_t>(), out.data<int32_t>(), N, K, d);
  });
  CUDA_LAUNCHED("select_rows");
}

// ---- selection and the candidate softmax in one kernel: one block per token; thread 0 picks the
// sense, the block computes its logit from the table row and streams the log-sum-exp over the
// candidates (the selected row masks its accidental hits), as candidate_softmax_kernel.
template <typename T>
__global__ void select_candidate_softmax_kernel(const T* x, const T* W, const T* b, const T* u, const T* v,
                                                const int32_t* rows, const uint8_t* enabled, const T* Wc,
                                                const T* bc, const int32_t* cid, T* loss, T* lse, int32_t* selected,
                                                int64_t P, int64_t S, int64_t K, int64_t d) {
  extern __shared__ unsigned char smem[];
  T* xs = reinterpret_cast<T*>(smem);
  __shared__ int32_t own;
  __shared__ T own_logit;
  const int64_t n = blockIdx.x;
  for (int64_t k = threadIdx.x; k < P; k += blockDim.x) xs[k] = x[n * P + k];
  if (threadIdx.x == 0) {
    own = rows[n * K + math::select_by_cosine(u + n * d, v + n * K * d, enabled + n * K, K, d)];
    selected[n] = own;
  }
  __syncthreads();
  const T* w = W + static_cast<int64_t>(own) * P;
  T t = 0;
  for (int64_t k = threadIdx.x; k < P; k += blockDim.x) t += xs[k] * w[k];
  t = block_reduce<T, false>(t);
  if (threadIdx.x == 0) own_logit = t + b[own];
  __syncthreads();
  const int32_t mine = own;
  const T total = candidates_logsumexp(xs, Wc, bc, cid, P, S, threadIdx.x == 0 ? own_logit : T(-INFINITY),
                                       threadIdx.x == 0 ? T(1) : T(0), [=](int32_t id) { return id == mine; });
  if (threadIdx.x == 0) {
    lse[n] = total;
    loss[n] = total - own_logit;
  }
}

void CudaBackend::select_candidate_softmax(const Tensor& x, const Tensor& W, const Tensor& b, const Tensor& u,
                                           const Tensor& v, const Tensor& rows, const Tensor& enabled,
                                           const Tensor& Wc, const Tensor& bc, const Tensor& cand_ids, Tensor& loss,
                                           Tensor& lse, Tensor& selected) {
  const int64_t N = x.dim(0), P = x.dim(1), S = Wc.dim(0), d = u.dim(1), K = N ? rows.numel() / N : 0;
  if (N == 0) return;
  dispatch(x.dtype(), "select_candidate_softmax", [&](auto tag) {
    using T = decltype(tag);
    select_candidate_softmax_kernel<<<N, kRowThreads, P * sizeof(T), stream_>>>(
        x.data<T>(), W.data<T>(), b.data<T>(), u.data<T>(), v.data<T>(), rows.data<int32_t>(),
        enabled.data<uint8_t>(), Wc.data<T>(), bc.data<T>(), cand_ids.data<int32_t>(), loss.data<T>(), lse.data<T>(),
        selected.data<int32_t>(), P, S, K, d);
  });
  CUDA_LAUNCHED("select_candidate_softmax");
}

}  // namespace sa
