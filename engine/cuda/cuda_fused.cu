// CUDA: layer norm, the fused LSTM-cell and highway kernels, Adagrad and sense selection (the
// candidate softmax is in cuda_candidate_softmax.cu).
#include "engine/core/bf16.h"
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
    layer_norm_kernel<<<rows, kRowThreads, 0, stream()>>>(x.data<T>(), gamma.data<T>(), beta.data<T>(), T(eps),
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

// dgamma and dbeta sum over every row (BERT: batch x positions, thousands): a thread per column
// walking all rows ran d / 256 blocks (two for BERT's 512). The rows are split over a second grid
// dimension into `parts` ranges, whose partial sums a second pass adds in order (deterministic).
template <typename T>
__global__ void layer_norm_gparams_parts_kernel(const T* x, const T* mean, const T* rstd, const T* gy, T* pa, T* pb,
                                                int64_t rows, int64_t d, int64_t parts) {
  const int64_t p = blockIdx.y, len = (rows + parts - 1) / parts, r0 = p * len, r1 = r0 + len < rows ? r0 + len : rows;
  CUDA_LOOP(k, d) {
    T a = 0, b = 0;
    for (int64_t r = r0; r < r1; ++r) {
      a += gy[r * d + k] * (x[r * d + k] - mean[r]) * rstd[r];
      b += gy[r * d + k];
    }
    pa[p * d + k] = a;
    pb[p * d + k] = b;
  }
}

template <typename T>
__global__ void layer_norm_gparams_finish_kernel(const T* pa, const T* pb, T* gg, T* gb, int64_t d, int64_t parts) {
  CUDA_LOOP(k, d) {
    T a = 0, b = 0;
    for (int64_t p = 0; p < parts; ++p) a += pa[p * d + k], b += pb[p * d + k];
    if (gg) gg[k] = a;
    if (gb) gb[k] = b;
  }
}

void CudaBackend::layer_norm_backward(const Tensor& x, const Tensor& gamma, const Tensor& mean, const Tensor& rstd,
                                      const Tensor& gy, Tensor* gx, Tensor* ggamma, Tensor* gbeta) {
  const int64_t d = x.dim(-1), rows = x.numel() / d;
  if (rows == 0) return;
  // at least 64 rows per range, at most 256 ranges
  const int64_t parts = std::max<int64_t>(1, std::min<int64_t>(256, rows / 64));
  Tensor pa, pb;
  if (ggamma || gbeta) pa = Tensor::empty({parts, d}, x.dtype(), x.device()), pb = Tensor::empty({parts, d}, x.dtype(), x.device());
  dispatch(x.dtype(), "layer_norm_backward", [&](auto tag) {
    using T = decltype(tag);
    if (gx)
      layer_norm_gx_kernel<<<rows, kRowThreads, 0, stream()>>>(x.data<T>(), gamma.data<T>(), mean.data<T>(),
                                                              rstd.data<T>(), gy.data<T>(), gx->data<T>(), d);
    if (ggamma || gbeta) {
      const dim3 grid(blocks_for(d), static_cast<unsigned>(parts));
      layer_norm_gparams_parts_kernel<<<grid, kThreads, 0, stream()>>>(x.data<T>(), mean.data<T>(), rstd.data<T>(),
                                                                      gy.data<T>(), pa.data<T>(), pb.data<T>(), rows,
                                                                      d, parts);
      layer_norm_gparams_finish_kernel<<<blocks_for(d), kThreads, 0, stream()>>>(
          pa.data<T>(), pb.data<T>(), ggamma ? ggamma->data<T>() : nullptr, gbeta ? gbeta->data<T>() : nullptr, d,
          parts);
    }
  });
  CUDA_LAUNCHED("layer_norm_backward");
}

// hb (f32 only): h rounded to bf16 as well, the operand of the next GEMM under precision = "bf16".
template <typename T>
__global__ void lstm_cell_kernel(const T* gates, const T* c_prev, T fb, T clip, T* c, T* h, uint16_t* hb, int64_t N,
                                 int64_t H) {
  CUDA_LOOP(e, N * H) {
    int64_t n = e / H, k = e % H;
    const T* g = gates + n * 4 * H + k;
    auto a = math::lstm_gates<T>(g[0], g[H], g[2 * H], g[3 * H], c_prev[e], fb);
    T cc = math::clip_cell<T>(a.c_raw, clip);
    c[e] = cc;
    const T hv = a.o * math::tanh(cc);
    h[e] = hv;
    if (hb) hb[e] = float_to_bf16(static_cast<float>(hv));
  }
}

static uint16_t* bf16_copy(const char* op, const Tensor& x, Tensor* copy) {
  if (!copy) return nullptr;
  if (x.dtype() != DType::F32 || copy->dtype() != DType::BF16 || copy->numel() != x.numel())
    fail_message(std::string(op) + ": the bf16 copy " + describe(*copy) + " of " + describe(x) +
                 " (expected bf16 of an f32 tensor's size)");
  return static_cast<uint16_t*>(copy->raw());
}

void CudaBackend::lstm_cell(const Tensor& gates, const Tensor& c_prev, double forget_bias, double cell_clip, Tensor& c,
                            Tensor& h, Tensor* h_bf16) {
  const int64_t H = c_prev.dim(-1), N = c_prev.numel() / H;
  uint16_t* hb = bf16_copy("lstm_cell", h, h_bf16);
  if (N * H == 0) return;
  dispatch(gates.dtype(), "lstm_cell", [&](auto tag) {
    using T = decltype(tag);
    lstm_cell_kernel<<<blocks_for(N * H), kThreads, 0, stream()>>>(gates.data<T>(), c_prev.data<T>(), T(forget_bias),
                                                                  T(cell_clip), c.data<T>(), h.data<T>(), hb, N, H);
  });
  CUDA_LAUNCHED("lstm_cell");
}

// gc and gcp may be one buffer: each thread reads its d c before writing its d c_prev.
template <typename T>
__global__ void lstm_cell_backward_kernel(const T* gates, const T* c_prev, const T* c, T fb, T clip, const T* gc,
                                          const T* gh, T* gg, T* gcp, uint16_t* gb, int64_t N, int64_t H) {
  CUDA_LOOP(e, N * H) {
    int64_t n = e / H, k = e % H;
    const T* g = gates + n * 4 * H + k;
    auto d = math::lstm_cell_grads<T>(g[0], g[H], g[2 * H], g[3 * H], c_prev[e], c[e], fb, clip, gc ? gc[e] : T(0),
                                      gh ? gh[e] : T(0));
    T* out = gg + n * 4 * H + k;
    out[0] = d.di, out[H] = d.dj, out[2 * H] = d.df, out[3 * H] = d.do_;
    if (gb) {
      uint16_t* o = gb + n * 4 * H + k;
      o[0] = float_to_bf16(float(d.di)), o[H] = float_to_bf16(float(d.dj));
      o[2 * H] = float_to_bf16(float(d.df)), o[3 * H] = float_to_bf16(float(d.do_));
    }
    if (gcp) gcp[e] = d.dc_prev;
  }
}

void CudaBackend::lstm_cell_backward(const Tensor& gates, const Tensor& c_prev, const Tensor& c, double forget_bias,
                                     double cell_clip, const Tensor* gc, const Tensor* gh, Tensor& ggates,
                                     Tensor* gc_prev, Tensor* ggates_bf16) {
  const int64_t H = c_prev.dim(-1), N = c_prev.numel() / H;
  uint16_t* gb = bf16_copy("lstm_cell_backward", ggates, ggates_bf16);
  if (N * H == 0) return;
  dispatch(gates.dtype(), "lstm_cell_backward", [&](auto tag) {
    using T = decltype(tag);
    lstm_cell_backward_kernel<<<blocks_for(N * H), kThreads, 0, stream()>>>(
        gates.data<T>(), c_prev.data<T>(), c.data<T>(), T(forget_bias), T(cell_clip), gc ? gc->data<T>() : nullptr,
        gh ? gh->data<T>() : nullptr, ggates.data<T>(), gc_prev ? gc_prev->data<T>() : nullptr, gb, N, H);
  });
  CUDA_LAUNCHED("lstm_cell_backward");
}

template <typename T>
__global__ void lstm_output_kernel(const T* m, T lo, T hi, bool clip, T* y, uint16_t* yb, int64_t n) {
  CUDA_LOOP(i, n) {
    const T v = clip ? math::unary<T>(UnaryOp::Clip, m[i], lo, hi) : m[i];
    y[i] = v;
    if (yb) yb[i] = float_to_bf16(static_cast<float>(v));
  }
}

void CudaBackend::lstm_output(const Tensor& m, double proj_clip, Tensor& y, Tensor* y_bf16) {
  const int64_t n = m.numel();
  uint16_t* yb = bf16_copy("lstm_output", y, y_bf16);
  if (n == 0 || (proj_clip <= 0 && !yb && y.raw() == m.raw())) return;
  dispatch(m.dtype(), "lstm_output", [&](auto tag) {
    using T = decltype(tag);
    lstm_output_kernel<<<blocks_for(n), kThreads, 0, stream()>>>(m.data<T>(), T(-proj_clip), T(proj_clip), proj_clip > 0,
                                                                y.data<T>(), yb, n);
  });
  CUDA_LAUNCHED("lstm_output");
}

template <typename T>
__global__ void lstm_output_backward_kernel(const T* m, const T* gy, const T* grec, T lo, T hi, bool clip, T* gm,
                                            uint16_t* gb, int64_t n) {
  CUDA_LOOP(i, n) {
    const T g = gy ? grec[i] + gy[i] : grec[i];
    const T v = clip ? g * math::unary_grad<T>(UnaryOp::Clip, m[i], m[i], lo, hi) : g;
    gm[i] = v;
    if (gb) gb[i] = float_to_bf16(static_cast<float>(v));
  }
}

void CudaBackend::lstm_output_backward(const Tensor& m, const Tensor* gy, const Tensor& grec, double proj_clip,
                                       Tensor& gm, Tensor* gm_bf16) {
  const int64_t n = m.numel();
  uint16_t* gb = bf16_copy("lstm_output_backward", gm, gm_bf16);
  if (n == 0) return;
  dispatch(m.dtype(), "lstm_output_backward", [&](auto tag) {
    using T = decltype(tag);
    lstm_output_backward_kernel<<<blocks_for(n), kThreads, 0, stream()>>>(
        m.data<T>(), gy ? gy->data<T>() : nullptr, grec.data<T>(), T(-proj_clip), T(proj_clip), proj_clip > 0,
        gm.data<T>(), gb, n);
  });
  CUDA_LAUNCHED("lstm_output_backward");
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
    highway_kernel<<<blocks_for(n), kThreads, 0, stream()>>>(carry.data<T>(), transform.data<T>(), x.data<T>(),
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
    highway_backward_kernel<<<blocks_for(n), kThreads, 0, stream()>>>(carry.data<T>(), transform.data<T>(), x.data<T>(),
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
    adagrad_kernel<<<blocks_for(n), kThreads, 0, stream()>>>(w.data<T>(), acc.data<T>(), g.data<T>(), n, T(lr));
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
    adagrad_rows_kernel<<<blocks_for(n * d), kThreads, 0, stream()>>>(w.data<T>(), acc.data<T>(), ids.data<int32_t>(),
                                                                     g.data<T>(), n, d, v, T(lr));
  });
  CUDA_LAUNCHED("adagrad_rows");
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
    select_rows_kernel<<<blocks_for(N), kThreads, 0, stream()>>>(u.data<T>(), v.data<T>(), rows.data<int32_t>(),
                                                                enabled.data<uint8_t>(), out.data<int32_t>(), N, K, d);
  });
  CUDA_LAUNCHED("select_rows");
}

}  // namespace sa
