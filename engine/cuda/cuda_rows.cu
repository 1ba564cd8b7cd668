// CUDA: row gathers/scatters and the char-CNN convolution with max over positions.
#include "engine/cuda/cuda_backend.cuh"

namespace sa {
using namespace cudak;

// Out-of-range indices read as a zero row (the CPU backend rejects them with an error).
template <typename E>
__global__ void gather_rows_kernel(const E* table, const int32_t* idx, E* out, int64_t n, int64_t d, int64_t v) {
  CUDA_LOOP(e, n * d) {
    int64_t i = e / d, c = e % d;
    int32_t r = idx[i];
    out[e] = (r >= 0 && r < v) ? table[r * d + c] : E(0);
  }
}

void CudaBackend::gather_rows(const Tensor& table, const Tensor& idx, Tensor& out) {
  const int64_t v = table.dim(0), d = table.dim(1), n = idx.numel();
  if (n * d == 0) return;
  unsigned b = blocks_for(n * d);
  const int32_t* ix = idx.data<int32_t>();
  switch (dtype_size(table.dtype())) {
    case 1: gather_rows_kernel<<<b, kThreads, 0, stream_>>>(static_cast<const uint8_t*>(table.raw()), ix, static_cast<uint8_t*>(out.raw()), n, d, v); break;
    case 2: gather_rows_kernel<<<b, kThreads, 0, stream_>>>(static_cast<const uint16_t*>(table.raw()), ix, static_cast<uint16_t*>(out.raw()), n, d, v); break;
    case 4: gather_rows_kernel<<<b, kThreads, 0, stream_>>>(static_cast<const uint32_t*>(table.raw()), ix, static_cast<uint32_t*>(out.raw()), n, d, v); break;
    default: gather_rows_kernel<<<b, kThreads, 0, stream_>>>(static_cast<const uint64_t*>(table.raw()), ix, static_cast<uint64_t*>(out.raw()), n, d, v); break;
  }
  CUDA_LAUNCHED("gather_rows");
}

template <typename T>
__global__ void scatter_add_rows_kernel(const T* src, const int32_t* idx, T* table, int64_t n, int64_t d, int64_t v) {
  CUDA_LOOP(e, n * d) {
    int64_t i = e / d, c = e % d;
    int32_t r = idx[i];
    if (r >= 0 && r < v) atomicAdd(&table[r * d + c], src[e]);
  }
}

void CudaBackend::scatter_add_rows(const Tensor& src, const Tensor& idx, Tensor& table) {
  const int64_t v = table.dim(0), d = table.dim(1), n = idx.numel();
  if (n * d == 0) return;
  dispatch(table.dtype(), "scatter_add_rows", [&](auto tag) {
    using T = decltype(tag);
    scatter_add_rows_kernel<<<blocks_for(n * d), kThreads, 0, stream_>>>(src.data<T>(), idx.data<int32_t>(),
                                                                         table.data<T>(), n, d, v);
  });
  CUDA_LAUNCHED("scatter_add_rows");
}

// Windows of W*Cin consecutive values of x, one row per (sample, position).
template <typename T>
__global__ void im2col_kernel(const T* x, T* cols, int64_t nn, int64_t L, int64_t Cin, int64_t P, int64_t K) {
  CUDA_LOOP(e, nn * P * K) {
    int64_t k = e % K, row = e / K, p = row % P, s = row / P;
    cols[e] = x[(s * L + p) * Cin + k];
  }
}

template <typename T>
__global__ void max_over_positions_kernel(const T* conv, const T* bias, T* y, int32_t* am, int64_t nn, int64_t P,
                                          int64_t Cout) {
  CUDA_LOOP(e, nn * Cout) {
    int64_t s = e / Cout, c = e % Cout;
    T best = T(-INFINITY);
    int32_t arg = 0;
    for (int64_t p = 0; p < P; ++p) {
      T v = conv[(s * P + p) * Cout + c];
      if (v > best) best = v, arg = static_cast<int32_t>(p);
    }
    y[e] = best + bias[c];
    am[e] = arg;
  }
}

void CudaBackend::conv1d_max(const Tensor& x, const Tensor& w, const Tensor& b, Tensor& y, Tensor& argmax) {
  const int64_t N = x.dim(0), L = x.dim(1), Cin = x.dim(2), W = w.dim(0), Cout = w.dim(2), P = L - W + 1,
                K = W * Cin;
  if (N * Cout == 0) return;
  // Chunks of samples bound the im2col and convolution buffers (about 64 MiB of f32 each).
  const int64_t chunk = std::max<int64_t>(1, (int64_t(1) << 24) / std::max<int64_t>(1, P * std::max(K, Cout)));
  const int64_t cn = std::min(chunk, N);
  Tensor cols = Tensor::empty({cn * P, K}, x.dtype(), device());
  Tensor conv = Tensor::empty({cn * P, Cout}, x.dtype(), device());
  for (int64_t n0 = 0; n0 < N; n0 += chunk) {
    const int64_t nn = std::min(chunk, N - n0);
    dispatch(x.dtype(), "conv1d_max", [&](auto tag) {
      using T = decltype(tag);
      im2col_kernel<<<blocks_for(nn * P * K), kThreads, 0, stream_>>>(x.data<T>() + n0 * L * Cin, cols.data<T>(), nn,
                                                                      L, Cin, P, K);
    });
    CUDA_LAUNCHED("conv1d_max/im2col");
    GemmArgs g;
    g.m = nn * P;
    g.n = Cout;
    g.k = K;
    Tensor cv = conv.rows(0, nn * P), cl = cols.rows(0, nn * P);
    gemm(g, cl, w, cv);
    dispatch(x.dtype(), "conv1d_max", [&](auto tag) {
      using T = decltype(tag);
      max_over_positions_kernel<<<blocks_for(nn * Cout), kThreads, 0, stream_>>>(
          conv.data<T>(), b.data<T>(), y.data<T>() + n0 * Cout, argmax.data<int32_t>() + n0 * Cout, nn, P, Cout);
    });
    CUDA_LAUNCHED("conv1d_max/max");
  }
}

// gw[k, c] += sum_n gy[n, c] * window(n, c)[k]: one thread per (k, c), deterministic.
template <typename T>
__global__ void conv_gw_kernel(const T* x, const int32_t* am, const T* gy, T* gw, int64_t N, int64_t L, int64_t Cin,
                               int64_t K, int64_t Cout) {
  CUDA_LOOP(e, K * Cout) {
    int64_t k = e / Cout, c = e % Cout;
    T s = 0;
    for (int64_t n = 0; n < N; ++n) s += gy[n * Cout + c] * x[(n * L + am[n * Cout + c]) * Cin + k];
    gw[e] += s;
  }
}

// gx[n, l, ci] += sum over filters whose max window covers position l: one thread per element.
template <typename T>
__global__ void conv_gx_kernel(const T* w, const int32_t* am, const T* gy, T* gx, int64_t N, int64_t L, int64_t Cin,
                               int64_t W, int64_t Cout) {
  CUDA_LOOP(e, N * L * Cin) {
    int64_t ci = e % Cin, l = (e / Cin) % L, n = e / (Cin * L);
    T s = 0;
    for (int64_t c = 0; c < Cout; ++c) {
      int64_t kw = l - am[n * Cout + c];
      if (kw >= 0 && kw < W) s += gy[n * Cout + c] * w[(kw * Cin + ci) * Cout + c];
    }
    gx[e] += s;
  }
}

template <typename T>
__global__ void conv_gb_kernel(const T* gy, T* gb, int64_t N, int64_t Cout) {
  CUDA_LOOP(c, Cout) {
    T s = 0;
    for (int64_t n = 0; n < N; ++n) s += gy[n * Cout + c];
    gb[c] += s;
  }
}

void CudaBackend::conv1d_max_backward(const Tensor& x, const Tensor& w, const Tensor& argmax, const Tensor& gy,
                                      Tensor* gx, Tensor* gw, Tensor* gb) {
  const int64_t N = x.dim(0), L = x.dim(1), Cin = x.dim(2), W = w.dim(0), Cout = w.dim(2), K = W * Cin;
  dispatch(x.dtype(), "conv1d_max_backward", [&](auto tag) {
    using T = decltype(tag);
    const int32_t* am = argmax.data<int32_t>();
    if (gb) conv_gb_kernel<<<blocks_for(Cout), kThreads, 0, stream_>>>(gy.data<T>(), gb->data<T>(), N, Cout);
    if (gw)
      conv_gw_kernel<<<blocks_for(K * Cout), kThreads, 0, stream_>>>(x.data<T>(), am, gy.data<T>(), gw->data<T>(), N, L,
                                                                     Cin, K, Cout);
    if (gx)
      conv_gx_kernel<<<blocks_for(N * L * Cin), kThreads, 0, stream_>>>(w.data<T>(), am, gy.data<T>(), gx->data<T>(), N,
                                                                        L, Cin, W, Cout);
  });
  CUDA_LAUNCHED("conv1d_max_backward");
}

}  // namespace sa
