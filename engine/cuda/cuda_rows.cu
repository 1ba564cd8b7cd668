// CUDA: row gathers/scatters and the char-CNN convolution with max over positions.
#include <algorithm>
#include <type_traits>

#include "engine/core/bf16.h"
#include "engine/core/precision.h"
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
    case 1: gather_rows_kernel<<<b, kThreads, 0, stream()>>>(static_cast<const uint8_t*>(table.raw()), ix, static_cast<uint8_t*>(out.raw()), n, d, v); break;
    case 2: gather_rows_kernel<<<b, kThreads, 0, stream()>>>(static_cast<const uint16_t*>(table.raw()), ix, static_cast<uint16_t*>(out.raw()), n, d, v); break;
    case 4: gather_rows_kernel<<<b, kThreads, 0, stream()>>>(static_cast<const uint32_t*>(table.raw()), ix, static_cast<uint32_t*>(out.raw()), n, d, v); break;
    default: gather_rows_kernel<<<b, kThreads, 0, stream()>>>(static_cast<const uint64_t*>(table.raw()), ix, static_cast<uint64_t*>(out.raw()), n, d, v); break;
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
    scatter_add_rows_kernel<<<blocks_for(n * d), kThreads, 0, stream()>>>(src.data<T>(), idx.data<int32_t>(),
                                                                         table.data<T>(), n, d, v);
  });
  CUDA_LAUNCHED("scatter_add_rows");
}

// Windows of W*Cin consecutive values of x, one row per (sample, position); C = uint16_t writes
// them as bf16 (x already rounded to bf16 under precision = "bf16", so the cast is exact).
template <typename T, typename C>
__global__ void im2col_kernel(const T* x, C* cols, int64_t nn, int64_t L, int64_t Cin, int64_t P, int64_t K) {
  CUDA_LOOP(e, nn * P * K) {
    int64_t k = e % K, row = e / K, p = row % P, s = row / P;
    if constexpr (std::is_same_v<C, uint16_t>) cols[e] = float_to_bf16(static_cast<float>(x[(s * L + p) * Cin + k]));
    else cols[e] = x[(s * L + p) * Cin + k];
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
  // Chunks of samples bound the im2col and convolution buffers (about 256 MiB of f32 each; at
  // 64 MiB elmo.cfg's widest filters took ~22 chunks of three launches and smaller GEMMs a step).
  const int64_t chunk = std::max<int64_t>(1, (int64_t(1) << 26) / std::max<int64_t>(1, P * std::max(K, Cout)));
  const int64_t cn = std::min(chunk, N);
  // Under precision = "bf16" the op hands x and w rounded to bf16 in f32: the product runs as a
  // bf16 GEMM (tensor cores; an f32 GEMM's speed otherwise, since tf32 is off), its products exact
  // and summed in f32 as before, so only the summation order changes.
  const Tensor wg = gemm_operand(w);
  const bool bf16 = wg.dtype() == DType::BF16;
  Tensor cols = Tensor::empty({cn * P, K}, bf16 ? DType::BF16 : x.dtype(), device());
  Tensor conv = Tensor::empty({cn * P, Cout}, x.dtype(), device());
  for (int64_t n0 = 0; n0 < N; n0 += chunk) {
    const int64_t nn = std::min(chunk, N - n0);
    dispatch(x.dtype(), "conv1d_max", [&](auto tag) {
      using T = decltype(tag);
      const T* xs = x.data<T>() + n0 * L * Cin;
      if (bf16)
        im2col_kernel<<<blocks_for(nn * P * K), kThreads, 0, stream()>>>(xs, static_cast<uint16_t*>(cols.raw()), nn, L,
                                                                        Cin, P, K);
      else
        im2col_kernel<<<blocks_for(nn * P * K), kThreads, 0, stream()>>>(xs, cols.data<T>(), nn, L, Cin, P, K);
    });
    CUDA_LAUNCHED("conv1d_max/im2col");
    GemmArgs g;
    g.m = nn * P;
    g.n = Cout;
    g.k = K;
    Tensor cv = conv.rows(0, nn * P), cl = cols.rows(0, nn * P);
    gemm(g, cl, wg, cv);
    dispatch(x.dtype(), "conv1d_max", [&](auto tag) {
      using T = decltype(tag);
      max_over_positions_kernel<<<blocks_for(nn * Cout), kThreads, 0, stream()>>>(
          conv.data<T>(), b.data<T>(), y.data<T>() + n0 * Cout, argmax.data<int32_t>() + n0 * Cout, nn, P, Cout);
    });
    CUDA_LAUNCHED("conv1d_max/max");
  }
}

// The weight and bias gradients sum over the N samples: a thread per output looping over all N
// waited on N dependent loads (5120 in a paper-size batch). Each thread sums one of `parts` ranges
// of samples (blockIdx.y) into partial[part]; conv_sum_parts adds the parts in order.
// partial[part][k * Cout + c] = sum over its samples of gy[n, c] * window(n, c)[k]; row K of
// partial holds the bias sums. A warp's threads take consecutive k of one filter, so they read
// one window, which is contiguous in x.
template <typename T>
__global__ void conv_gw_parts_kernel(const T* x, const int32_t* am, const T* gy, T* partial, int64_t N, int64_t L,
                                     int64_t Cin, int64_t K, int64_t Cout, int64_t parts) {
  const int64_t len = (N + parts - 1) / parts, n0 = blockIdx.y * len, n1 = n0 + len < N ? n0 + len : N;
  T* out = partial + blockIdx.y * (K + 1) * Cout;
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < (K + 1) * Cout;
       e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t c = e / (K + 1), k = e % (K + 1);
    T s = 0;
    if (k == K) {
      for (int64_t n = n0; n < n1; ++n) s += gy[n * Cout + c];
    } else {
      for (int64_t n = n0; n < n1; ++n) s += gy[n * Cout + c] * x[(n * L + am[n * Cout + c]) * Cin + k];
    }
    out[k * Cout + c] = s;
  }
}

// The same partial sums, tiled: a block takes `ct` filters and a range of samples, stages `nb`
// samples at a time in shared memory (their x rows, and the block's filters' argmax and gy), and
// each thread sums up to kGwOutputs of the block's (filter, k) outputs in registers. The thread
// per output above re-read every window from global memory, one dependent load after another
// (about 3 G loads for elmo.cfg's char CNN a step); here x is read once per block and sample.
// Same outputs and layout as conv_gw_parts_kernel; each output sums its samples in order.
constexpr int kGwOutputs = 16;

template <typename T>
__global__ void conv_gw_tiled_kernel(const T* x, const int32_t* am, const T* gy, T* partial, int64_t N, int64_t L,
                                     int64_t Cin, int64_t K, int64_t Cout, int64_t ct, int64_t nb, int64_t parts) {
  extern __shared__ __align__(16) unsigned char smem[];
  const int64_t row = L * Cin;
  T* xs = reinterpret_cast<T*>(smem);  // [nb][L * Cin]
  T* gs = xs + nb * row;               // [nb][ct]
  int32_t* as = reinterpret_cast<int32_t*>(gs + nb * ct);  // [nb][ct]
  const int64_t c0 = blockIdx.x * ct, cn = c0 + ct < Cout ? ct : Cout - c0;
  const int64_t len = (N + parts - 1) / parts, n0 = blockIdx.y * len, n1 = n0 + len < N ? n0 + len : N;
  const int64_t outs = cn * (K + 1);  // output o: filter c0 + o / (K + 1), k = o % (K + 1) (K: the bias)
  T acc[kGwOutputs];
#pragma unroll
  for (int r = 0; r < kGwOutputs; ++r) acc[r] = T(0);
  for (int64_t s0 = n0; s0 < n1; s0 += nb) {
    const int64_t sn = s0 + nb < n1 ? nb : n1 - s0;
    __syncthreads();  // the previous tile is read
    for (int64_t e = threadIdx.x; e < sn * row; e += blockDim.x) xs[e] = x[s0 * row + e];
    for (int64_t e = threadIdx.x; e < sn * cn; e += blockDim.x) {
      const int64_t i = e / cn, c = e % cn;
      gs[i * ct + c] = gy[(s0 + i) * Cout + c0 + c];
      as[i * ct + c] = am[(s0 + i) * Cout + c0 + c];
    }
    __syncthreads();
#pragma unroll
    for (int r = 0; r < kGwOutputs; ++r) {
      const int64_t o = threadIdx.x + int64_t(r) * blockDim.x;
      if (o < outs) {
        const int64_t c = o / (K + 1), k = o % (K + 1);
        T sum = acc[r];
        if (k == K) {
          for (int64_t i = 0; i < sn; ++i) sum += gs[i * ct + c];
        } else {
          for (int64_t i = 0; i < sn; ++i) sum += gs[i * ct + c] * xs[i * row + as[i * ct + c] * Cin + k];
        }
        acc[r] = sum;
      }
    }
  }
  T* out = partial + blockIdx.y * (K + 1) * Cout;
#pragma unroll
  for (int r = 0; r < kGwOutputs; ++r) {
    const int64_t o = threadIdx.x + int64_t(r) * blockDim.x;
    if (o < outs) out[(o % (K + 1)) * Cout + c0 + o / (K + 1)] = acc[r];
  }
}

template <typename T>
__global__ void conv_sum_parts_kernel(const T* partial, T* gw, T* gb, int64_t K, int64_t Cout, int64_t parts) {
  CUDA_LOOP(e, (K + 1) * Cout) {
    T s = 0;
    for (int64_t p = 0; p < parts; ++p) s += partial[p * (K + 1) * Cout + e];
    if (e < K * Cout) {
      if (gw) gw[e] += s;
    } else if (gb) {
      gb[e - K * Cout] += s;
    }
  }
}

// gx[n, l, ci] += sum over the filters whose max window covers position l. One block per sample:
// its filters are bucketed by the position of their maximum (a stable counting sort, so sums keep
// one order), and each (l, ci) visits only the buckets of the W positions whose window covers l,
// about W / P of the filters instead of all of them. The sort: counts by atomics, their scan by
// one thread (P + 1 values), then one warp places 32 filters at a time in filter order, each lane
// ranked among the lanes of its bucket (__match_any_sync); one thread placing all Cout filters
// took thousands of dependent steps per sample.
template <typename T>
__global__ void conv_gx_kernel(const T* w, const int32_t* am, const T* gy, T* gx, int64_t L, int64_t Cin, int64_t W,
                               int64_t P, int64_t Cout) {
  extern __shared__ __align__(16) unsigned char smem[];
  T* g = reinterpret_cast<T*>(smem);                             // gy of this sample [Cout]
  int32_t* order = reinterpret_cast<int32_t*>(g + Cout);         // filters sorted by position [Cout]
  int32_t* start = order + Cout;                                 // bucket starts [P + 1]
  int32_t* fill = start + P + 1;                                 // next free slot per bucket [P + 1]
  const int64_t n = blockIdx.x;
  const int32_t* a = am + n * Cout;
  for (int64_t c = threadIdx.x; c < Cout; c += blockDim.x) g[c] = gy[n * Cout + c];
  for (int64_t p = threadIdx.x; p <= P; p += blockDim.x) fill[p] = 0;
  __syncthreads();
  for (int64_t c = threadIdx.x; c < Cout; c += blockDim.x) atomicAdd(&fill[a[c]], 1);
  __syncthreads();
  if (threadIdx.x == 0) {
    int32_t sum = 0;
    for (int64_t p = 0; p <= P; ++p) {
      const int32_t k = p < P ? fill[p] : 0;
      start[p] = fill[p] = sum;
      sum += k;
    }
  }
  __syncthreads();
  if (threadIdx.x < 32) {
    const unsigned lane = threadIdx.x;
    for (int64_t c0 = 0; c0 < Cout; c0 += 32) {
      const int64_t c = c0 + lane;
      const int key = c < Cout ? a[c] : -1;
      const unsigned same = __match_any_sync(0xffffffffu, key);
      const int rank = __popc(same & ((1u << lane) - 1u));
      const int base = key >= 0 ? fill[key] : 0;
      __syncwarp();
      if (key >= 0) {
        order[base + rank] = static_cast<int32_t>(c);
        if (rank == 0) fill[key] = base + __popc(same);
      }
      __syncwarp();
    }
  }
  __syncthreads();
  for (int64_t e = threadIdx.x; e < L * Cin; e += blockDim.x) {
    const int64_t l = e / Cin, ci = e % Cin;
    const int64_t p0 = l - W + 1 > 0 ? l - W + 1 : 0, p1 = l < P - 1 ? l : P - 1;
    T s = 0;
    for (int64_t p = p0; p <= p1; ++p) {
      const T* wr = w + ((l - p) * Cin + ci) * Cout;
      for (int32_t i = start[p]; i < start[p + 1]; ++i) s += g[order[i]] * wr[order[i]];
    }
    gx[n * L * Cin + e] += s;
  }
}

void CudaBackend::conv1d_max_backward(const Tensor& x, const Tensor& w, const Tensor& argmax, const Tensor& gy,
                                      Tensor* gx, Tensor* gw, Tensor* gb) {
  const int64_t N = x.dim(0), L = x.dim(1), Cin = x.dim(2), W = w.dim(0), Cout = w.dim(2), K = W * Cin;
  dispatch(x.dtype(), "conv1d_max_backward", [&](auto tag) {
    using T = decltype(tag);
    const int32_t* am = argmax.data<int32_t>();
    if ((gw || gb) && N > 0) {
      // Tiled where a block's outputs fit its registers and a few samples its shared memory.
      const int64_t ct = std::min<int64_t>(Cout, kThreads * kGwOutputs / (K + 1));
      const int64_t per_sample = L * Cin * int64_t(sizeof(T)) + ct * int64_t(sizeof(T) + sizeof(int32_t));
      const int64_t nb = ct > 0 ? std::min<int64_t>(16, (32 << 10) / per_sample) : 0;
      const bool tiled = ct > 0 && nb > 0 && !std::getenv("SA_CONV_GW_UNTILED");
      const int64_t col_blocks = tiled ? (Cout + ct - 1) / ct : 0;
      // Enough blocks to fill the GPU (a few per SM) without a large partial buffer.
      const int64_t parts = tiled ? std::max<int64_t>(1, std::min<int64_t>({128, (512 + col_blocks - 1) / col_blocks,
                                                                            (N + nb - 1) / nb}))
                                  : std::max<int64_t>(1, std::min<int64_t>(64, N / 64));
      Tensor partial = Tensor::empty({parts * (K + 1) * Cout}, x.dtype(), device());
      if (tiled) {
        const size_t shared = static_cast<size_t>(nb * per_sample);
        conv_gw_tiled_kernel<<<dim3(static_cast<unsigned>(col_blocks), static_cast<unsigned>(parts)), kThreads, shared,
                               stream()>>>(x.data<T>(), am, gy.data<T>(), partial.data<T>(), N, L, Cin, K, Cout, ct, nb,
                                          parts);
      } else {
        const dim3 grid(blocks_for((K + 1) * Cout), static_cast<unsigned>(parts));
        conv_gw_parts_kernel<<<grid, kThreads, 0, stream()>>>(x.data<T>(), am, gy.data<T>(), partial.data<T>(), N, L,
                                                             Cin, K, Cout, parts);
      }
      conv_sum_parts_kernel<<<blocks_for((K + 1) * Cout), kThreads, 0, stream()>>>(
          partial.data<T>(), gw ? gw->data<T>() : nullptr, gb ? gb->data<T>() : nullptr, K, Cout, parts);
    }
    if (gx && N > 0) {
      const int64_t P = L - W + 1;
      const size_t shared = static_cast<size_t>(Cout) * (sizeof(T) + sizeof(int32_t)) + sizeof(int32_t) * 2 * (P + 1);
      if (shared > 48 * 1024) {  // thousands of filters of one width: ask for more than the default
        int dev = 0, most = 0;
        CUDA_CHECK(cudaGetDevice(&dev));
        CUDA_CHECK(cudaDeviceGetAttribute(&most, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
        if (shared > static_cast<size_t>(most))
          fail_message("conv1d_max backward on CUDA: " + std::to_string(Cout) + " filters of width " +
                       std::to_string(W) + " need " + std::to_string(shared) + " bytes of shared memory a block; " +
                       "this GPU offers " + std::to_string(most) + " (use fewer filters of this width)");
        CUDA_CHECK(cudaFuncSetAttribute(conv_gx_kernel<T>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        static_cast<int>(shared)));
      }
      conv_gx_kernel<<<N, kThreads, shared, stream()>>>(w.data<T>(), am, gy.data<T>(), gx->data<T>(), L, Cin, W, P,
                                                       Cout);
    }
  });
  CUDA_LAUNCHED("conv1d_max_backward");
}

}  // namespace sa
