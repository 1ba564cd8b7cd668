// CUDA: fills, strided copies, casts and elementwise math.
#include <algorithm>
#include <cstdlib>

#include "engine/core/bf16.h"
#include "engine/core/scalar_math.h"
#include "engine/cuda/cuda_backend.cuh"

namespace sa {
using namespace cudak;

template <typename T>
__global__ void fill_kernel(T* p, int64_t n, T v) {
  CUDA_LOOP(i, n) p[i] = v;
}

template <typename T>
static void launch_fill(void* p, int64_t n, T v, cudaStream_t s) {
  fill_kernel<<<blocks_for(n), kThreads, 0, s>>>(static_cast<T*>(p), n, v);
  CUDA_LAUNCHED("fill");
}

void CudaBackend::fill(Tensor& t, double value) {
  int64_t n = t.numel();
  if (n == 0) return;
  switch (t.dtype()) {
    case DType::F32: launch_fill<float>(t.raw(), n, static_cast<float>(value), stream()); break;
    case DType::F64: launch_fill<double>(t.raw(), n, value, stream()); break;
    case DType::BF16: launch_fill<uint16_t>(t.raw(), n, float_to_bf16(static_cast<float>(value)), stream()); break;
    case DType::I32: launch_fill<int32_t>(t.raw(), n, static_cast<int32_t>(value), stream()); break;
    case DType::U8: launch_fill<uint8_t>(t.raw(), n, static_cast<uint8_t>(value), stream()); break;
  }
}

// SA_GENERAL_KERNELS=1: broadcasts and strided copies through their general kernels, not the row
// forms below (bench ops times both; read at each call that would take a row form).
static bool general_kernels() {
  const char* e = std::getenv("SA_GENERAL_KERNELS");
  return e && e[0] == '1';
}

template <typename E>
__global__ void copy_strided_kernel(const E* src, E* dst, CopyPlan p, int64_t total) {
  CUDA_LOOP(i, total) {
    int64_t rem = i, so = p.src_offset, d = p.dst_offset;
    for (int k = p.rank - 1; k >= 0; --k) {
      int64_t c = rem % p.shape[k];
      rem /= p.shape[k];
      so += c * p.src_stride[k];
      d += c * p.dst_stride[k];
    }
    dst[d] = src[so];
  }
}

// Contiguous rows moved 16 bytes at a time (the plan in units of 16 bytes): the divisions that
// find a row's offsets serve 16 bytes, where the general kernel divides once per dimension for
// every element (BERT's head permutes: five divisions per element, more time than the memory).
__global__ void copy_rows_16b_kernel(const uint4* src, uint4* dst, CopyPlan p, int64_t per_row, int64_t pieces) {
  CUDA_LOOP(c, pieces) {
    const int64_t row = c / per_row, j = c - row * per_row;
    int64_t so, d;
    copy_row_offsets(p, row, &so, &d);
    dst[d + j] = src[so + j];
  }
}

void CudaBackend::copy_strided(const Tensor& src, Tensor& dst, const CopyPlan& plan) {
  const CopyPlan p = collapse_copy_plan(plan);
  int64_t total = 1;
  for (int k = 0; k < p.rank; ++k) total *= p.shape[k];
  if (total == 0) return;
  const size_t es = dtype_size(src.dtype());
  if (const int w = copy_vector_width(p, es, src.raw(), dst.raw()); w > 1 && !general_kernels()) {
    CopyPlan q = p;  // in 16-byte pieces: the rows' lengths, offsets and outer strides divided by w
    const int r = q.rank - 1;
    q.shape[r] /= w, q.src_offset /= w, q.dst_offset /= w;
    for (int k = 0; k < r; ++k) q.src_stride[k] /= w, q.dst_stride[k] /= w;
    const int64_t pieces = total / w;
    copy_rows_16b_kernel<<<blocks_for(pieces), kThreads, 0, stream()>>>(static_cast<const uint4*>(src.raw()),
                                                                        static_cast<uint4*>(dst.raw()), q, q.shape[r],
                                                                        pieces);
    CUDA_LAUNCHED("copy_strided");
    return;
  }
  unsigned b = blocks_for(total);
  switch (es) {
    case 1: copy_strided_kernel<<<b, kThreads, 0, stream()>>>(static_cast<const uint8_t*>(src.raw()), static_cast<uint8_t*>(dst.raw()), p, total); break;
    case 2: copy_strided_kernel<<<b, kThreads, 0, stream()>>>(static_cast<const uint16_t*>(src.raw()), static_cast<uint16_t*>(dst.raw()), p, total); break;
    case 4: copy_strided_kernel<<<b, kThreads, 0, stream()>>>(static_cast<const uint32_t*>(src.raw()), static_cast<uint32_t*>(dst.raw()), p, total); break;
    default: copy_strided_kernel<<<b, kThreads, 0, stream()>>>(static_cast<const uint64_t*>(src.raw()), static_cast<uint64_t*>(dst.raw()), p, total); break;
  }
  CUDA_LAUNCHED("copy_strided");
}

// Element conversion; bf16 travels as its uint16_t bits.
template <typename S, typename D>
struct Convert {
  __device__ static D go(S v) { return static_cast<D>(v); }
};
template <typename D>
struct Convert<uint16_t, D> {
  __device__ static D go(uint16_t v) { return static_cast<D>(bf16_to_float(v)); }
};
template <typename S>
struct Convert<S, uint16_t> {
  __device__ static uint16_t go(S v) { return float_to_bf16(static_cast<float>(v)); }
};

template <>
struct Convert<uint16_t, uint16_t> {
  __device__ static uint16_t go(uint16_t v) { return v; }
};

template <typename S, typename D>
__global__ void cast_kernel(const S* s, D* d, int64_t n) {
  CUDA_LOOP(i, n) d[i] = Convert<S, D>::go(s[i]);
}

template <typename S>
static void cast_from(const Tensor& src, Tensor& dst, cudaStream_t st) {
  const S* s = static_cast<const S*>(src.raw());
  int64_t n = src.numel();
  unsigned b = blocks_for(n);
  switch (dst.dtype()) {
    case DType::F32: cast_kernel<<<b, kThreads, 0, st>>>(s, static_cast<float*>(dst.raw()), n); break;
    case DType::F64: cast_kernel<<<b, kThreads, 0, st>>>(s, static_cast<double*>(dst.raw()), n); break;
    case DType::BF16: cast_kernel<<<b, kThreads, 0, st>>>(s, static_cast<uint16_t*>(dst.raw()), n); break;
    case DType::I32: cast_kernel<<<b, kThreads, 0, st>>>(s, static_cast<int32_t*>(dst.raw()), n); break;
    case DType::U8: cast_kernel<<<b, kThreads, 0, st>>>(s, static_cast<uint8_t*>(dst.raw()), n); break;
  }
  CUDA_LAUNCHED("cast");
}

void CudaBackend::cast(const Tensor& src, Tensor& dst) {
  if (src.numel() == 0) return;
  switch (src.dtype()) {
    case DType::F32: cast_from<float>(src, dst, stream()); break;
    case DType::F64: cast_from<double>(src, dst, stream()); break;
    case DType::BF16: cast_from<uint16_t>(src, dst, stream()); break;
    case DType::I32: cast_from<int32_t>(src, dst, stream()); break;
    case DType::U8: cast_from<uint8_t>(src, dst, stream()); break;
  }
}

template <typename T>
__global__ void unary_kernel(UnaryOp op, const T* x, T* y, int64_t n, T p0, T p1) {
  CUDA_LOOP(i, n) y[i] = math::unary<T>(op, x[i], p0, p1);
}

void CudaBackend::unary(UnaryOp op, const Tensor& x, Tensor& y, double p0, double p1) {
  int64_t n = x.numel();
  if (n == 0) return;
  dispatch(x.dtype(), "unary", [&](auto tag) {
    using T = decltype(tag);
    unary_kernel<<<blocks_for(n), kThreads, 0, stream()>>>(op, x.data<T>(), y.data<T>(), n, T(p0), T(p1));
  });
  CUDA_LAUNCHED("unary");
}

template <typename T>
__global__ void unary_backward_kernel(UnaryOp op, const T* x, const T* y, const T* gy, T* gx, int64_t n, T p0, T p1,
                                      bool acc) {
  CUDA_LOOP(i, n) {
    T g = gy[i] * math::unary_grad<T>(op, x[i], y[i], p0, p1);
    gx[i] = acc ? gx[i] + g : g;
  }
}

void CudaBackend::unary_backward(UnaryOp op, const Tensor& x, const Tensor& y, const Tensor& gy, Tensor& gx,
                                 double p0, double p1, bool accumulate) {
  int64_t n = x.numel();
  if (n == 0) return;
  dispatch(x.dtype(), "unary_backward", [&](auto tag) {
    using T = decltype(tag);
    unary_backward_kernel<<<blocks_for(n), kThreads, 0, stream()>>>(op, x.data<T>(), y.data<T>(), gy.data<T>(),
                                                                   gx.data<T>(), n, T(p0), T(p1), accumulate);
  });
  CUDA_LAUNCHED("unary_backward");
}

__device__ __forceinline__ int64_t bcast_offset(const BroadcastPlan& p, const int64_t* st, int64_t i) {
  int64_t off = 0;
  for (int k = p.rank - 1; k >= 0; --k) {
    off += (i % p.shape[k]) * st[k];
    i /= p.shape[k];
  }
  return off;
}

template <typename T>
__global__ void binary_kernel(BinaryOp op, const T* a, const T* b, T* out, BroadcastPlan p, int64_t n, bool same) {
  CUDA_LOOP(i, n) {
    out[i] = same ? math::binary(op, a[i], b[i])
                  : math::binary(op, a[bcast_offset(p, p.stride_a, i)], b[bcast_offset(p, p.stride_b, i)]);
  }
}

// The common broadcasts as rows (broadcast_as_rows): element i = o * inner + j of the output is
// op(a[o * so_a + j * si_a], b[o * so_b + j * si_b]). The general kernel divides twice per dimension
// and operand for every element (a bias add over [rows, cols]: eight divisions, and a GPU has no
// divider), which made such adds bound by integer arithmetic, not memory; this one divides once.
template <typename T>
__global__ void binary_rows_kernel(BinaryOp op, const T* a, const T* b, T* out, int64_t n, int64_t inner,
                                   int64_t so_a, int64_t si_a, int64_t so_b, int64_t si_b) {
  CUDA_LOOP(i, n) {
    const int64_t o = i / inner, j = i - o * inner;
    out[i] = math::binary(op, a[o * so_a + j * si_a], b[o * so_b + j * si_b]);
  }
}

void CudaBackend::binary(BinaryOp op, const Tensor& a, const Tensor& b, Tensor& out, const BroadcastPlan& p) {
  int64_t n = out.numel();
  if (n == 0) return;
  bool same = a.numel() == n && b.numel() == n;
  BroadcastRows r;
  const bool rows = !same && !general_kernels() && broadcast_as_rows(p, &r);
  dispatch(out.dtype(), "binary", [&](auto tag) {
    using T = decltype(tag);
    if (rows)
      binary_rows_kernel<<<blocks_for(n), kThreads, 0, stream()>>>(op, a.data<T>(), b.data<T>(), out.data<T>(), n,
                                                                  r.inner, r.so[0], r.si[0], r.so[1], r.si[1]);
    else
      binary_kernel<<<blocks_for(n), kThreads, 0, stream()>>>(op, a.data<T>(), b.data<T>(), out.data<T>(), p, n, same);
  });
  CUDA_LAUNCHED("binary");
}

// One thread per output element sums its preimage: deterministic, no atomics.
struct SumToPlan {
  int n_kept = 0, n_red = 0;
  int64_t kept_shape[BroadcastPlan::kMaxRank], kept_gstride[BroadcastPlan::kMaxRank];
  int64_t red_shape[BroadcastPlan::kMaxRank], red_gstride[BroadcastPlan::kMaxRank];
  int64_t red_total = 1;
};

// Output j's sum over reduced positions [r0, r1) of its preimage, in order.
template <typename T>
__device__ T sum_preimage(const T* g, const SumToPlan& p, int64_t j, int64_t r0, int64_t r1) {
  int64_t rem = j, base = 0;
  for (int k = p.n_kept - 1; k >= 0; --k) {
    base += (rem % p.kept_shape[k]) * p.kept_gstride[k];
    rem /= p.kept_shape[k];
  }
  T s = 0;
  if (p.n_red == 1) {  // one reduced dimension (a bias's rows): no index arithmetic per term
    const int64_t gs = p.red_gstride[0];
    for (int64_t r = r0; r < r1; ++r) s += g[base + r * gs];
    return s;
  }
  for (int64_t r = r0; r < r1; ++r) {
    int64_t rr = r, off = base;
    for (int k = p.n_red - 1; k >= 0; --k) {
      off += (rr % p.red_shape[k]) * p.red_gstride[k];
      rr /= p.red_shape[k];
    }
    s += g[off];
  }
  return s;
}

template <typename T>
__global__ void sum_to_kernel(const T* g, T* out, SumToPlan p, int64_t m, bool acc) {
  CUDA_LOOP(j, m) {
    const T s = sum_preimage(g, p, j, 0, p.red_total);
    out[j] = acc ? out[j] + s : s;
  }
}

// Few outputs with long preimages (a bias gradient: 4096 sums of 5120 rows) leave most of the GPU
// idle with one thread per output: the preimages are split into `parts` ranges (blockIdx.y), whose
// partial sums a second pass adds in order, so the result stays deterministic.
template <typename T>
__global__ void sum_to_parts_kernel(const T* g, T* partial, SumToPlan p, int64_t m, int64_t parts) {
  const int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x, part = blockIdx.y;
  if (j >= m) return;
  const int64_t len = (p.red_total + parts - 1) / parts, r0 = part * len;
  const int64_t r1 = r0 + len < p.red_total ? r0 + len : p.red_total;
  partial[part * m + j] = sum_preimage(g, p, j, r0, r1);
}

template <typename T>
__global__ void sum_parts_kernel(const T* partial, T* out, int64_t m, int64_t parts, bool acc) {
  CUDA_LOOP(j, m) {
    T s = 0;
    for (int64_t k = 0; k < parts; ++k) s += partial[k * m + j];
    out[j] = acc ? out[j] + s : s;
  }
}

void CudaBackend::sum_to(const Tensor& g, Tensor& out, const BroadcastPlan& bp, bool accumulate) {
  SumToPlan p;
  int64_t gstride = 1;
  int64_t gst[BroadcastPlan::kMaxRank];
  for (int k = bp.rank - 1; k >= 0; --k) {
    gst[k] = gstride;
    gstride *= bp.shape[k];
  }
  for (int k = 0; k < bp.rank; ++k) {
    if (bp.stride_b[k] == 0 && bp.shape[k] != 1) {
      p.red_shape[p.n_red] = bp.shape[k];
      p.red_gstride[p.n_red++] = gst[k];
      p.red_total *= bp.shape[k];
    } else {
      p.kept_shape[p.n_kept] = bp.shape[k];
      p.kept_gstride[p.n_kept++] = gst[k];
    }
  }
  int64_t m = out.numel();
  if (m == 0) return;
  // Enough threads to fill the GPU (~64k): split each preimage when the outputs alone are fewer,
  // keeping at least 64 terms per part.
  const int64_t parts = std::min<int64_t>({(65536 + m - 1) / m, p.red_total / 64, 1024});
  dispatch(g.dtype(), "sum_to", [&](auto tag) {
    using T = decltype(tag);
    if (parts > 1) {
      Tensor partial = Tensor::empty({parts * m}, g.dtype(), device());
      const dim3 grid(static_cast<unsigned>((m + kThreads - 1) / kThreads), static_cast<unsigned>(parts));
      sum_to_parts_kernel<<<grid, kThreads, 0, stream()>>>(g.data<T>(), partial.data<T>(), p, m, parts);
      sum_parts_kernel<<<blocks_for(m), kThreads, 0, stream()>>>(partial.data<T>(), out.data<T>(), m, parts, accumulate);
    } else {
      sum_to_kernel<<<blocks_for(m), kThreads, 0, stream()>>>(g.data<T>(), out.data<T>(), p, m, accumulate);
    }
  });
  CUDA_LAUNCHED("sum_to");
}

template <typename T>
__global__ void axpy_kernel(T a, const T* x, T* y, int64_t n) {
  CUDA_LOOP(i, n) y[i] += a * x[i];
}

void CudaBackend::axpy(double alpha, const Tensor& x, Tensor& y) {
  int64_t n = y.numel();
  if (n == 0) return;
  dispatch(y.dtype(), "axpy", [&](auto tag) {
    using T = decltype(tag);
    axpy_kernel<<<blocks_for(n), kThreads, 0, stream()>>>(T(alpha), x.data<T>(), y.data<T>(), n);
  });
  CUDA_LAUNCHED("axpy");
}

template <typename T>
__global__ void masked_fill_kernel(const T* x, const uint8_t* m, T v, T* y, BroadcastPlan p, int64_t n) {
  CUDA_LOOP(i, n) y[i] = m[bcast_offset(p, p.stride_b, i)] ? v : x[i];
}

void CudaBackend::masked_fill(const Tensor& x, const Tensor& mask, double value, Tensor& y, const BroadcastPlan& p) {
  int64_t n = y.numel();
  if (n == 0) return;
  dispatch(x.dtype(), "masked_fill", [&](auto tag) {
    using T = decltype(tag);
    masked_fill_kernel<<<blocks_for(n), kThreads, 0, stream()>>>(x.data<T>(), mask.data<uint8_t>(), T(value),
                                                                y.data<T>(), p, n);
  });
  CUDA_LAUNCHED("masked_fill");
}

// How far a replayed step's dropout offsets have moved since its capture (cuda_capture.cu): a
// graph keeps its kernels' arguments, so the kernel adds the shift its first node sets. 0 outside
// a replay. Offsets and shifts are whole Philox blocks (Generator::take), so the block count a
// launch was sized for holds.
__device__ uint64_t g_replay_offset_shift = 0;

namespace cuda {
void* replay_offset_shift_address() {
  void* p = nullptr;
  CUDA_CHECK(cudaGetSymbolAddress(&p, g_replay_offset_shift));
  return p;
}
}  // namespace cuda

// A thread per Philox block of four values (philox_block_uniforms): one draw for four elements.
template <typename T>
__global__ void dropout_kernel(uint64_t seed, uint64_t offset, float p, T keep, T* m, int64_t n, int64_t blocks) {
  offset += g_replay_offset_shift;
  const uint64_t first_block = offset >> 2;
  CUDA_LOOP(b, blocks) {
    philox_block_uniforms(seed, offset, static_cast<uint64_t>(n), first_block + static_cast<uint64_t>(b),
                          [&](uint64_t i, float u) { m[i] = u < p ? T(0) : keep; });
  }
}

void CudaBackend::dropout_mask(uint64_t seed, uint64_t offset, double p, Tensor& mask) {
  capture_seed(seed);
  int64_t n = mask.numel();
  if (n == 0) return;
  dispatch(mask.dtype(), "dropout", [&](auto tag) {
    using T = decltype(tag);
    const int64_t blocks = static_cast<int64_t>(((offset + static_cast<uint64_t>(n) - 1) >> 2) - (offset >> 2) + 1);
    dropout_kernel<<<blocks_for(blocks), kThreads, 0, stream()>>>(seed, offset, static_cast<float>(p),
                                                                 T(1) / (T(1) - T(p)), mask.data<T>(), n, blocks);
  });
  CUDA_LAUNCHED("dropout");
}

__global__ void draw_distinct_kernel(const int32_t* list, uint32_t n, uint64_t key, int32_t* out, int64_t k) {
  CUDA_LOOP(i, k) out[i] = list[permuted_index(static_cast<uint32_t>(i), n, key)];
}

void CudaBackend::draw_distinct(const Tensor& list, uint64_t key, Tensor& out) {
  capture_refuse("draw_distinct's key is the step's own");
  const int64_t k = out.numel();
  if (k == 0) return;
  draw_distinct_kernel<<<blocks_for(k), kThreads, 0, stream()>>>(list.data<int32_t>(),
                                                               static_cast<uint32_t>(list.numel()), key,
                                                               out.data<int32_t>(), k);
  CUDA_LAUNCHED("draw_distinct");
}

template <typename T>
__global__ void nonfinite_kernel(const T* x, int64_t n, bool allow_neg_inf, unsigned long long* count) {
  unsigned long long c = 0;
  CUDA_LOOP(i, n) {
    double v = static_cast<double>(x[i]);
    c += !isfinite(v) && !(allow_neg_inf && isinf(v) && v < 0);
  }
  if (c) atomicAdd(count, c);
}

__global__ void nonfinite_bf16_kernel(const uint16_t* x, int64_t n, bool allow_neg_inf, unsigned long long* count) {
  unsigned long long c = 0;
  // exponent all ones: Inf or NaN; 0xff80 is -inf
  CUDA_LOOP(i, n) c += (x[i] & 0x7f80u) == 0x7f80u && !(allow_neg_inf && x[i] == 0xff80u);
  if (c) atomicAdd(count, c);
}

int64_t CudaBackend::count_nonfinite(const Tensor& x, bool allow_neg_inf) {
  int64_t n = x.numel();
  if (n == 0) return 0;
  Tensor counter = Tensor::zeros({2}, DType::I32, device());  // 8 bytes for one 64-bit counter
  auto* c = static_cast<unsigned long long*>(counter.raw());
  if (x.dtype() == DType::BF16) {
    nonfinite_bf16_kernel<<<blocks_for(n), kThreads, 0, stream()>>>(static_cast<const uint16_t*>(x.raw()), n,
                                                                   allow_neg_inf, c);
  } else {
    dispatch(x.dtype(), "count_nonfinite", [&](auto tag) {
      using T = decltype(tag);
      nonfinite_kernel<<<blocks_for(n), kThreads, 0, stream()>>>(x.data<T>(), n, allow_neg_inf, c);
    });
  }
  CUDA_LAUNCHED("count_nonfinite");
  unsigned long long host = 0;
  if (capturing()) capture_read();
  CUDA_WAIT(cudaMemcpy(&host, c, sizeof(host), cudaMemcpyDeviceToHost));
  counters::host_read();
  return static_cast<int64_t>(host);
}

}  // namespace sa
