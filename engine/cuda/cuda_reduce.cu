// CUDA: reductions, softmax family and cross entropy. Row-wise ops run one block per row.
#include "engine/core/scalar_math.h"
#include "engine/cuda/cuda_backend.cuh"

namespace sa {
using namespace cudak;

constexpr int kRowThreads = 256;

// The sum (or max) of x[b, e) over the block, every thread getting it. For a max, *first gets the
// first position holding it, as the CPU loop picks (b when the range holds nothing above -inf).
template <typename T, bool kMax>
__device__ T block_reduce_range(const T* x, int64_t b, int64_t e, int64_t* first) {
  T best = kMax ? T(-INFINITY) : T(0);
  int64_t arg = b;
  for (int64_t k = b + threadIdx.x; k < e; k += blockDim.x) {
    if (kMax) {
      if (x[k] > best) best = x[k], arg = k;
    } else {
      best += x[k];
    }
  }
  const T total = block_reduce<T, kMax>(best);
  if (kMax) {
    __shared__ unsigned long long f;
    if (threadIdx.x == 0) f = ~0ull;
    __syncthreads();
    if (best == total) atomicMin(&f, static_cast<unsigned long long>(arg));
    __syncthreads();
    *first = f == ~0ull ? b : static_cast<int64_t>(f);
  }
  return total;
}

// inner == 1: one block per output, a tree reduction over n.
template <typename T, bool kMax>
__global__ void reduce_rows_kernel(const T* x, int64_t n, T* out, int32_t* argmax) {
  int64_t first = 0;
  const T total = block_reduce_range<T, kMax>(x + blockIdx.x * n, 0, n, &first);
  if (threadIdx.x == 0) {
    out[blockIdx.x] = total;
    if (kMax && argmax) argmax[blockIdx.x] = static_cast<int32_t>(first);
  }
}

// Few long rows (a whole-tensor sum or max): one block per row left most of the GPU idle (2.6 GB/s
// on an H100). Each row is split over `parts` blocks, whose partials (value, first index of the
// maximum) a second pass reduces in order, so the result and the argmax equal the one-block pass.
template <typename T, bool kMax>
__global__ void reduce_parts_kernel(const T* x, int64_t n, int64_t parts, T* pv, int32_t* pa) {
  const int64_t row = blockIdx.y, part = blockIdx.x, len = (n + parts - 1) / parts;
  const int64_t b = part * len, e = b + len < n ? b + len : n;
  int64_t first = b;
  const T total = block_reduce_range<T, kMax>(x + row * n, b < n ? b : n, e, &first);
  if (threadIdx.x == 0) {
    pv[row * parts + part] = total;
    pa[row * parts + part] = static_cast<int32_t>(first);
  }
}

template <typename T, bool kMax>
__global__ void reduce_partials_kernel(const T* pv, const int32_t* pa, int64_t parts, T* out, int32_t* argmax) {
  int64_t first = 0;
  const T total = block_reduce_range<T, kMax>(pv + blockIdx.x * parts, 0, parts, &first);
  if (threadIdx.x == 0) {
    out[blockIdx.x] = total;
    if (kMax && argmax) argmax[blockIdx.x] = pa[blockIdx.x * parts + first];
  }
}

// inner > 1: one thread per output (o, i), coalesced over i.
template <typename T, bool kMax>
__global__ void reduce_strided_kernel(const T* x, int64_t outer, int64_t n, int64_t inner, T* out, int32_t* argmax) {
  CUDA_LOOP(j, outer * inner) {
    int64_t o = j / inner, i = j % inner;
    const T* base = x + o * n * inner + i;
    T best = kMax ? T(-INFINITY) : T(0);
    int32_t arg = 0;
    for (int64_t k = 0; k < n; ++k) {
      T v = base[k * inner];
      if (kMax) {
        if (v > best) best = v, arg = static_cast<int32_t>(k);
      } else {
        best += v;
      }
    }
    out[j] = best;
    if (kMax && argmax) argmax[j] = arg;
  }
}

// The sum of squares in double: `parts` blocks each sum a stretch, then one block adds the partials
// in order (the same result on every call).
template <typename T>
__global__ void sum_squares_parts_kernel(const T* x, int64_t n, int64_t parts, double* pv) {
  const int64_t len = (n + parts - 1) / parts, b = blockIdx.x * len, e = b + len < n ? b + len : n;
  double s = 0;
  for (int64_t k = b + threadIdx.x; k < e; k += blockDim.x) s += double(x[k]) * double(x[k]);
  const double total = block_reduce<double, false>(s);
  if (threadIdx.x == 0) pv[blockIdx.x] = total;
}

void CudaBackend::sum_squares(const Tensor& x, Tensor& out) {
  const int64_t n = x.numel(), parts = std::max<int64_t>(1, std::min<int64_t>(1024, n / 16384));
  Tensor pv = Tensor::empty({parts}, DType::F64, x.device());
  dispatch(x.dtype(), "sum_squares", [&](auto tag) {
    using T = decltype(tag);
    sum_squares_parts_kernel<T><<<static_cast<unsigned>(parts), kRowThreads, 0, stream()>>>(x.data<T>(), n, parts,
                                                                                           pv.data<double>());
  });
  sum_partials_kernel<double><<<1, kRowThreads, 0, stream()>>>(pv.data<double>(), parts, out.data<double>());
  CUDA_LAUNCHED("sum_squares");
}

void CudaBackend::reduce(ReduceOp op, const Tensor& x, int64_t outer, int64_t n, int64_t inner, Tensor& out,
                         Tensor* argmax) {
  if (outer * inner == 0) return;
  int32_t* am = argmax ? argmax->data<int32_t>() : nullptr;
  dispatch(x.dtype(), "reduce", [&](auto tag) {
    using T = decltype(tag);
    const int64_t parts = std::min<int64_t>(1024, n / 65536);
    if (inner == 1 && outer < 64 && parts > 1) {
      Tensor pv = Tensor::empty({outer * parts}, x.dtype(), x.device());
      Tensor pa = Tensor::empty({outer * parts}, DType::I32, x.device());
      const dim3 grid(static_cast<unsigned>(parts), static_cast<unsigned>(outer));
      if (op == ReduceOp::Max) {
        reduce_parts_kernel<T, true><<<grid, kRowThreads, 0, stream()>>>(x.data<T>(), n, parts, pv.data<T>(),
                                                                        pa.data<int32_t>());
        reduce_partials_kernel<T, true><<<outer, kRowThreads, 0, stream()>>>(pv.data<T>(), pa.data<int32_t>(), parts,
                                                                            out.data<T>(), am);
      } else {
        reduce_parts_kernel<T, false><<<grid, kRowThreads, 0, stream()>>>(x.data<T>(), n, parts, pv.data<T>(),
                                                                         pa.data<int32_t>());
        reduce_partials_kernel<T, false><<<outer, kRowThreads, 0, stream()>>>(pv.data<T>(), pa.data<int32_t>(),
                                                                             parts, out.data<T>(), am);
      }
    } else if (inner == 1) {
      if (op == ReduceOp::Max)
        reduce_rows_kernel<T, true><<<outer, kRowThreads, 0, stream()>>>(x.data<T>(), n, out.data<T>(), am);
      else
        reduce_rows_kernel<T, false><<<outer, kRowThreads, 0, stream()>>>(x.data<T>(), n, out.data<T>(), am);
    } else {
      unsigned b = blocks_for(outer * inner);
      if (op == ReduceOp::Max)
        reduce_strided_kernel<T, true><<<b, kThreads, 0, stream()>>>(x.data<T>(), outer, n, inner, out.data<T>(), am);
      else
        reduce_strided_kernel<T, false><<<b, kThreads, 0, stream()>>>(x.data<T>(), outer, n, inner, out.data<T>(), am);
    }
  });
  CUDA_LAUNCHED("reduce");
}

template <typename T>
__global__ void reduce_max_backward_kernel(const T* gy, const int32_t* am, int64_t outer, int64_t n, int64_t inner,
                                           T* gx) {
  CUDA_LOOP(j, outer * inner) {
    int64_t o = j / inner, i = j % inner;
    gx[(o * n + am[j]) * inner + i] += gy[j];
  }
}

void CudaBackend::reduce_max_backward(const Tensor& gy, const Tensor& argmax, int64_t outer, int64_t n, int64_t inner,
                                      Tensor& gx) {
  if (outer * inner == 0) return;
  dispatch(gy.dtype(), "reduce_max_backward", [&](auto tag) {
    using T = decltype(tag);
    reduce_max_backward_kernel<<<blocks_for(outer * inner), kThreads, 0, stream()>>>(
        gy.data<T>(), argmax.data<int32_t>(), outer, n, inner, gx.data<T>());
  });
  CUDA_LAUNCHED("reduce_max_backward");
}

// log-sum-exp of row r (all threads of the block get it); a row of all -inf gives -inf.
template <typename T>
__device__ T row_lse(const T* x, int64_t c) {
  T m = T(-INFINITY);
  for (int64_t k = threadIdx.x; k < c; k += blockDim.x) m = x[k] > m ? x[k] : m;
  m = block_reduce<T, true>(m);
  if (m == T(-INFINITY)) return m;
  T s = 0;
  for (int64_t k = threadIdx.x; k < c; k += blockDim.x) s += math::exp(x[k] - m);
  s = block_reduce<T, false>(s);
  return m + math::log(s);
}

template <typename T>
__global__ void softmax_kernel(const T* x, T* y, int64_t c, bool log) {
  const T* xr = x + blockIdx.x * c;
  T* yr = y + blockIdx.x * c;
  T lse = row_lse(xr, c);
  for (int64_t k = threadIdx.x; k < c; k += blockDim.x) yr[k] = log ? xr[k] - lse : math::exp(xr[k] - lse);
}

void CudaBackend::softmax(const Tensor& x, Tensor& y, bool log) {
  int64_t c = x.dim(-1), rows = x.numel() / c;
  if (rows == 0) return;
  dispatch(x.dtype(), "softmax", [&](auto tag) {
    using T = decltype(tag);
    softmax_kernel<<<rows, kRowThreads, 0, stream()>>>(x.data<T>(), y.data<T>(), c, log);
  });
  CUDA_LAUNCHED("softmax");
}

template <typename T>
__global__ void softmax_backward_kernel(const T* y, const T* gy, T* gx, int64_t c, bool log, bool acc) {
  const T *yr = y + blockIdx.x * c, *gr = gy + blockIdx.x * c;
  T* out = gx + blockIdx.x * c;
  T dot = 0;
  for (int64_t k = threadIdx.x; k < c; k += blockDim.x) dot += log ? gr[k] : gr[k] * yr[k];
  dot = block_reduce<T, false>(dot);
  for (int64_t k = threadIdx.x; k < c; k += blockDim.x) {
    T v = log ? gr[k] - math::exp(yr[k]) * dot : yr[k] * (gr[k] - dot);
    out[k] = acc ? out[k] + v : v;
  }
}

void CudaBackend::softmax_backward(const Tensor& y, const Tensor& gy, Tensor& gx, bool log, bool accumulate) {
  int64_t c = y.dim(-1), rows = y.numel() / c;
  if (rows == 0) return;
  dispatch(y.dtype(), "softmax_backward", [&](auto tag) {
    using T = decltype(tag);
    softmax_backward_kernel<<<rows, kRowThreads, 0, stream()>>>(y.data<T>(), gy.data<T>(), gx.data<T>(), c, log,
                                                               accumulate);
  });
  CUDA_LAUNCHED("softmax_backward");
}

template <typename T>
__global__ void logsumexp_kernel(const T* x, T* out, int64_t c) {
  T lse = row_lse(x + blockIdx.x * c, c);
  if (threadIdx.x == 0) out[blockIdx.x] = lse;
}

void CudaBackend::logsumexp(const Tensor& x, Tensor& out) {
  int64_t c = x.dim(-1), rows = x.numel() / c;
  if (rows == 0) return;
  dispatch(x.dtype(), "logsumexp", [&](auto tag) {
    using T = decltype(tag);
    logsumexp_kernel<<<rows, kRowThreads, 0, stream()>>>(x.data<T>(), out.data<T>(), c);
  });
  CUDA_LAUNCHED("logsumexp");
}

// Labels outside [-1, c) give a NaN loss, which the numerics check reports by op name.
template <typename T>
__global__ void cross_entropy_kernel(const T* x, const int32_t* labels, T* loss, T* lse, int64_t c) {
  const T* xr = x + blockIdx.x * c;
  T l = row_lse(xr, c);
  if (threadIdx.x == 0) {
    int32_t y = labels[blockIdx.x];
    lse[blockIdx.x] = l;
    loss[blockIdx.x] = y < -1 || y >= c ? T(NAN) : (y < 0 ? T(0) : l - xr[y]);
  }
}

void CudaBackend::cross_entropy(const Tensor& x, const Tensor& labels, Tensor& loss, Tensor& lse) {
  int64_t c = x.dim(-1), rows = x.numel() / c;
  if (rows == 0) return;
  dispatch(x.dtype(), "cross_entropy", [&](auto tag) {
    using T = decltype(tag);
    cross_entropy_kernel<<<rows, kRowThreads, 0, stream()>>>(x.data<T>(), labels.data<int32_t>(), loss.data<T>(),
                                                            lse.data<T>(), c);
  });
  CUDA_LAUNCHED("cross_entropy");
}

template <typename T>
__global__ void cross_entropy_backward_kernel(const T* x, const int32_t* labels, const T* lse, const T* gl, T* gx,
                                              int64_t c, bool acc) {
  const int64_t r = blockIdx.x;
  const int32_t y = labels[r];
  const T g = y < 0 ? T(0) : gl[r];
  for (int64_t k = threadIdx.x; k < c; k += blockDim.x) {
    T v = g * (math::exp(x[r * c + k] - lse[r]) - (k == y ? T(1) : T(0)));
    gx[r * c + k] = acc ? gx[r * c + k] + v : v;
  }
}

void CudaBackend::cross_entropy_backward(const Tensor& x, const Tensor& labels, const Tensor& lse,
                                         const Tensor& gloss, Tensor& gx, bool accumulate) {
  int64_t c = x.dim(-1), rows = x.numel() / c;
  if (rows == 0) return;
  dispatch(x.dtype(), "cross_entropy_backward", [&](auto tag) {
    using T = decltype(tag);
    cross_entropy_backward_kernel<<<rows, kRowThreads, 0, stream()>>>(
        x.data<T>(), labels.data<int32_t>(), lse.data<T>(), gloss.data<T>(), gx.data<T>(), c, accumulate);
  });
  CUDA_LAUNCHED("cross_entropy_backward");
}

template <typename T>
__global__ void soft_cross_entropy_kernel(const T* x, const T* t, T* loss, T* lse, int64_t c) {
  const T *xr = x + blockIdx.x * c, *tr = t + blockIdx.x * c;
  T l = row_lse(xr, c);
  T s = 0;
  for (int64_t k = threadIdx.x; k < c; k += blockDim.x)
    if (tr[k] != T(0)) s += tr[k] * (l - xr[k]);  // 0 * -inf stays 0
  s = block_reduce<T, false>(s);
  if (threadIdx.x == 0) {
    lse[blockIdx.x] = l;
    loss[blockIdx.x] = s;
  }
}

void CudaBackend::soft_cross_entropy(const Tensor& x, const Tensor& t, Tensor& loss, Tensor& lse) {
  int64_t c = x.dim(-1), rows = x.numel() / c;
  if (rows == 0) return;
  dispatch(x.dtype(), "soft_cross_entropy", [&](auto tag) {
    using T = decltype(tag);
    soft_cross_entropy_kernel<<<rows, kRowThreads, 0, stream()>>>(x.data<T>(), t.data<T>(), loss.data<T>(),
                                                                 lse.data<T>(), c);
  });
  CUDA_LAUNCHED("soft_cross_entropy");
}

template <typename T>
__global__ void soft_cross_entropy_backward_kernel(const T* x, const T* t, const T* lse, const T* gl, T* gx, int64_t c,
                                                   bool acc) {
  const int64_t r = blockIdx.x;
  T tsum = 0;
  for (int64_t k = threadIdx.x; k < c; k += blockDim.x) tsum += t[r * c + k];
  tsum = block_reduce<T, false>(tsum);
  for (int64_t k = threadIdx.x; k < c; k += blockDim.x) {
    T v = gl[r] * (tsum * math::exp(x[r * c + k] - lse[r]) - t[r * c + k]);
    gx[r * c + k] = acc ? gx[r * c + k] + v : v;
  }
}

void CudaBackend::soft_cross_entropy_backward(const Tensor& x, const Tensor& t, const Tensor& lse,
                                              const Tensor& gloss, Tensor& gx, bool accumulate) {
  int64_t c = x.dim(-1), rows = x.numel() / c;
  if (rows == 0) return;
  dispatch(x.dtype(), "soft_cross_entropy_backward", [&](auto tag) {
    using T = decltype(tag);
    soft_cross_entropy_backward_kernel<<<rows, kRowThreads, 0, stream()>>>(
        x.data<T>(), t.data<T>(), lse.data<T>(), gloss.data<T>(), gx.data<T>(), c, accumulate);
  });
  CUDA_LAUNCHED("soft_cross_entropy_backward");
}

}  // namespace sa
