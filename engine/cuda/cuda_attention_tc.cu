// Fused attention on tensor cores (wmma: bf16 or TF32 operands with f32 accumulation): the fused
// path under precision = "bf16" or "tf32". The scheme is the per-thread kernels' (online softmax forward; a
// backward that recomputes the probabilities from the saved log-sum-exp, one kernel over key
// blocks for dK and dV and one over query blocks for dQ, so nothing is written twice), but a warp
// owns 16 rows and every product is a 16x16xK tile product (K = 16 for bf16, 8 for TF32). Each warp's tiles sit in shared
// memory: a fragment's element-to-row mapping is unspecified, and the softmax works by rows.
#include <cuda_bf16.h>
#include <mma.h>

#include <string>
#include <type_traits>

#include "engine/cuda/cuda_attention.cuh"

namespace sa::cudak {

namespace {

using namespace nvcuda;
using bf16 = __nv_bfloat16;

constexpr int kWarps = 4, kWarpRows = 16, kBlockRows = kWarps * kWarpRows;  // rows (queries or keys) per block
constexpr int kTile = 32;  // the streamed side's rows (keys, or queries) per step
constexpr int kHalf = kTile / 2;
// Row strides of the warps' [16][32] tiles, padded so that the 16 lanes reading one column of 16
// rows hit 2 banks at most, not one bank 16 times (wmma takes strides in multiples of 4 floats or
// 8 bf16s). O's rows are padded likewise (kOutPad); the rounded probabilities' in Operands.
constexpr int kScoreStride = kTile + 4, kOutPad = 4;

#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
#define SA_TC_BODY 1  // bf16 and TF32 wmma need compute 8.0; older targets compile empty kernels, never launched
#endif

// The operands as the tensor cores take them: bf16 (rounded to 8 bits of mantissa, products of
// depth 16) or TF32 (f32 in shared memory rounded to 10 bits, depth 8).
struct Bf16Operands {
  using Elem = bf16;
  static constexpr int K = 16, kProbStride = kTile + 8;
#ifdef SA_TC_BODY
  using Frag = bf16;
  __device__ static Elem round(float x) { return __float2bfloat16_rn(x); }
#endif
};
struct Tf32Operands {
  using Elem = float;
  static constexpr int K = 8, kProbStride = kTile + 4;
#ifdef SA_TC_BODY
  using Frag = wmma::precision::tf32;
  __device__ static Elem round(float x) { return wmma::__float_to_tf32(x); }
#endif
};

#ifdef SA_TC_BODY
template <typename Op>
using FragA = wmma::fragment<wmma::matrix_a, 16, 16, Op::K, typename Op::Frag, wmma::row_major>;
template <typename Op>
using FragBRow = wmma::fragment<wmma::matrix_b, 16, 16, Op::K, typename Op::Frag, wmma::row_major>;
template <typename Op>
using FragBCol = wmma::fragment<wmma::matrix_b, 16, 16, Op::K, typename Op::Frag, wmma::col_major>;
template <typename Op>
using FragC = wmma::fragment<wmma::accumulator, 16, 16, Op::K, float>;

// Rows [r0, r0 + n) of a [T, d] f32 matrix into an [n][D] operand tile, rounded (zeros past T and d).
template <typename Op, int D>
__device__ void load_rounded(const float* m, int64_t r0, int n, const AttnShape& s, typename Op::Elem* tile) {
  for (int e = threadIdx.x; e < n * D; e += blockDim.x) {
    const int r = e / D, c = e % D;
    tile[e] = Op::round(r0 + r < s.T && c < s.d ? m[(r0 + r) * s.d + c] : 0.f);
  }
}

// c[16][N] = a[16][K] b^T, b given as N rows of K (the scores' form: queries times keys).
template <typename Op, int K, int N>
__device__ void product_abt(const typename Op::Elem* a, int lda, const typename Op::Elem* b, int ldb, float* c,
                            int ldc) {
  for (int n = 0; n < N / 16; ++n) {
    FragC<Op> acc;
    wmma::fill_fragment(acc, 0.f);
    for (int kk = 0; kk < K / Op::K; ++kk) {
      FragA<Op> fa;
      FragBCol<Op> fb;
      wmma::load_matrix_sync(fa, a + kk * Op::K, lda);
      wmma::load_matrix_sync(fb, b + n * 16 * ldb + kk * Op::K, ldb);
      wmma::mma_sync(acc, fa, fb, acc);
    }
    wmma::store_matrix_sync(c + n * 16, acc, ldc, wmma::mem_row_major);
  }
}

// acc[n] += a[16][kTile] b[kTile][16 n ...] (a with row stride Op::kProbStride, b row-major
// [kTile][D]): the accumulating products.
template <typename Op, int D>
__device__ void accumulate_ab(const typename Op::Elem* a, const typename Op::Elem* b, FragC<Op> (&acc)[D / 16]) {
  for (int n = 0; n < D / 16; ++n)
    for (int kk = 0; kk < kTile / Op::K; ++kk) {
      FragA<Op> fa;
      FragBRow<Op> fb;
      wmma::load_matrix_sync(fa, a + kk * Op::K, Op::kProbStride);
      wmma::load_matrix_sync(fb, b + kk * Op::K * D + n * 16, D);
      wmma::mma_sync(acc[n], fa, fb, acc[n]);
    }
}

// Rows r0 + [0, 16) of a [T, d] gradient from a warp's accumulators times `scale`, through the
// warp's [16][D] f32 staging tile (rows past T and columns past d are not written).
template <typename Op, int D>
__device__ void store_rows(FragC<Op> (&acc)[D / 16], float scale, float* stage, int64_t r0, const AttnShape& s,
                           float* g) {
  for (int n = 0; n < D / 16; ++n) {
    for (int e = 0; e < acc[n].num_elements; ++e) acc[n].x[e] *= scale;
    wmma::store_matrix_sync(stage + n * 16, acc[n], D, wmma::mem_row_major);
  }
  __syncwarp();
  const int lane = threadIdx.x % 32;
  for (int e = lane; e < kWarpRows * D; e += 32) {
    const int r = e / D, c = e % D;
    if (r0 + r < s.T && c < s.d) g[(r0 + r) * s.d + c] = stage[e];
  }
}
#endif

// Shared memory, in bytes (every part a multiple of 128 bytes, so every tile pointer is aligned
// as wmma needs).
template <typename Op, int D>
constexpr size_t forward_smem() {
  using E = typename Op::Elem;
  return (kBlockRows + 2 * kTile) * D * sizeof(E) + kBlockRows * (D + kOutPad) * sizeof(float) +
         kBlockRows * (kScoreStride * sizeof(float) + Op::kProbStride * sizeof(E)) + kTile * sizeof(float);
}
template <typename Op, int D>
constexpr size_t backward_smem() {  // BackwardTiles, below
  using E = typename Op::Elem;
  return (2 * kBlockRows + 2 * kTile) * D * sizeof(E) +
         kBlockRows * 2 * (kScoreStride * sizeof(float) + Op::kProbStride * sizeof(E)) +
         kBlockRows * D * sizeof(float) + 2 * kTile * sizeof(float);
}

// Forward: block (query block, head); warp w owns queries i0 + 16 w + [0, 16). Row r of a warp's
// tile is kept by lanes r and r + 16, each over half of a key tile; O accumulates in shared memory
// because each new maximum rescales it by rows.
template <typename Op, int D>
__global__ void __launch_bounds__(kWarps * 32)
    attention_forward_tc_kernel(const float* q, const float* k, const float* v, const uint8_t* mask, AttnShape s,
                                float* out, float* lse) {
#ifdef SA_TC_BODY
  using E = typename Op::Elem;
  constexpr int kProbStride = Op::kProbStride;
  extern __shared__ __align__(128) unsigned char smem[];
  E* Qs = reinterpret_cast<E*>(smem);                            // [64][D]
  E* Ks = Qs + kBlockRows * D;                                   // [32][D]
  E* Vs = Ks + kTile * D;                                        // [32][D]
  constexpr int kOut = D + kOutPad;                                   // O's row stride
  float* Os = reinterpret_cast<float*>(Vs + kTile * D);               // [64][kOut]
  float* Ss = Os + kBlockRows * kOut;                                 // [64][kScoreStride]
  E* Ps = reinterpret_cast<E*>(Ss + kBlockRows * kScoreStride);        // [64][kProbStride]
  float* live = reinterpret_cast<float*>(Ps + kBlockRows * kProbStride);  // [32]: 1 for a key that counts
  const int w = threadIdx.x / 32, lane = threadIdx.x % 32, r = lane % 16, half = lane / 16;
  const int64_t bh = blockIdx.y, b = bh / s.H, i0 = int64_t{blockIdx.x} * kBlockRows, base = bh * s.T * s.d;
  const int64_t i = i0 + w * kWarpRows + r;
  const float scale = static_cast<float>(s.scale);
  E *Qw = Qs + w * kWarpRows * D, *Pw = Ps + w * kWarpRows * kProbStride;
  float *Ow = Os + w * kWarpRows * kOut, *Sw = Ss + w * kWarpRows * kScoreStride;
  load_rounded<Op, D>(q + base, i0, kBlockRows, s, Qs);
  for (int e = threadIdx.x; e < kBlockRows * kOut; e += blockDim.x) Os[e] = 0.f;
  float m = -INFINITY, l = 0.f;
  for (int64_t j0 = 0; j0 < s.T; j0 += kTile) {
    __syncthreads();  // every warp is done with the previous tile
    load_rounded<Op, D>(k + base, j0, kTile, s, Ks);
    load_rounded<Op, D>(v + base, j0, kTile, s, Vs);
    for (int jj = threadIdx.x; jj < kTile; jj += blockDim.x)
      live[jj] = j0 + jj < s.T && mask[b * s.T + j0 + jj] ? 1.f : 0.f;
    __syncthreads();
    product_abt<Op, D, kTile>(Qw, D, Ks, D, Sw, kScoreStride);  // S = q k^T (unscaled)
    __syncwarp();
    float tmax = -INFINITY;
    for (int c = half * kHalf; c < (half + 1) * kHalf; ++c)
      if (live[c] != 0.f) tmax = fmaxf(tmax, Sw[r * kScoreStride + c] * scale);
    tmax = fmaxf(tmax, __shfl_xor_sync(0xffffffffu, tmax, 16));
    const float mnew = fmaxf(m, tmax);
    const float rescale = mnew == -INFINITY ? 1.f : expf(m - mnew);  // 0 when m was -inf (nothing summed)
    float part = 0.f;
    for (int c = half * kHalf; c < (half + 1) * kHalf; ++c) {
      const float e = live[c] != 0.f ? expf(Sw[r * kScoreStride + c] * scale - mnew) : 0.f;
      part += e;
      Pw[r * kProbStride + c] = Op::round(e == 0.f ? 0.f : e * keep_factor<float>(s, bh, i, j0 + c));
    }
    part += __shfl_xor_sync(0xffffffffu, part, 16);
    l = l * rescale + part;
    m = mnew;
    for (int c = half * (D / 2); c < (half + 1) * (D / 2); ++c) Ow[r * kOut + c] *= rescale;
    __syncwarp();
    FragC<Op> o[D / 16];  // O += Pd v
    for (int n = 0; n < D / 16; ++n) wmma::load_matrix_sync(o[n], Ow + n * 16, kOut, wmma::mem_row_major);
    accumulate_ab<Op, D>(Pw, Vs, o);
    for (int n = 0; n < D / 16; ++n) wmma::store_matrix_sync(Ow + n * 16, o[n], kOut, wmma::mem_row_major);
    __syncwarp();
  }
  if (i >= s.T) return;
  // A row with every key padded: 0, as the CPU gives (and lse = -inf).
  for (int c = half; c < s.d; c += 2) out[base + i * s.d + c] = l > 0.f ? Ow[r * kOut + c] / l : 0.f;
  if (half == 0) lse[bh * s.T + i] = m + logf(l);
#endif
}

// The backward's shared tiles: the block's own rows (A, B: [64][D]), the streamed rows (X, Y:
// [32][D]), the warps' [16][32] products (P1, P2 in f32; R1, R2 rounded), a [64][D] staging tile
// and two per-streamed-row values.
template <typename Op, int D>
struct BackwardTiles {
  using E = typename Op::Elem;
  E *A, *B, *X, *Y, *R1, *R2;
  float *P1, *P2, *stage, *u1, *u2;
  __device__ explicit BackwardTiles(unsigned char* smem) {
    A = reinterpret_cast<E*>(smem), B = A + kBlockRows * D, X = B + kBlockRows * D, Y = X + kTile * D;
    P1 = reinterpret_cast<float*>(Y + kTile * D), P2 = P1 + kBlockRows * kScoreStride;
    R1 = reinterpret_cast<E*>(P2 + kBlockRows * kScoreStride), R2 = R1 + kBlockRows * Op::kProbStride;
    stage = reinterpret_cast<float*>(R2 + kBlockRows * Op::kProbStride), u1 = stage + kBlockRows * D, u2 = u1 + kTile;
  }
};

// dK and dV: block (key block, head); warp w owns keys j0 + 16 w + [0, 16) and streams the
// queries: S^T = k q^T, gPd^T = v gout^T, then Pd^T and dS^T by elements, dV += Pd^T gout and
// dK += dS^T q in the warp's accumulators.
template <typename Op, int D>
__global__ void __launch_bounds__(kWarps * 32)
    attention_dkdv_tc_kernel(const float* q, const float* k, const float* v, const uint8_t* mask, const float* lse,
                             const float* delta, const float* gout, AttnShape s, float* gk, float* gv) {
#ifdef SA_TC_BODY
  extern __shared__ __align__(128) unsigned char smem[];
  const BackwardTiles<Op, D> t(smem);  // A: k, B: v, X: q, Y: gout; P1: S^T, P2: gPd^T; R1: Pd^T, R2: dS^T
  constexpr int kProbStride = Op::kProbStride;
  const int w = threadIdx.x / 32, lane = threadIdx.x % 32, r = lane % 16, half = lane / 16;
  const int64_t bh = blockIdx.y, b = bh / s.H, jb = int64_t{blockIdx.x} * kBlockRows, base = bh * s.T * s.d;
  const int64_t j = jb + w * kWarpRows + r;
  const bool key_live = j < s.T && mask[b * s.T + j];
  const float scale = static_cast<float>(s.scale);
  const int so = w * kWarpRows * kScoreStride, po = w * kWarpRows * kProbStride;  // the warp's tiles
  load_rounded<Op, D>(k + base, jb, kBlockRows, s, t.A);
  load_rounded<Op, D>(v + base, jb, kBlockRows, s, t.B);
  FragC<Op> dk[D / 16], dv[D / 16];
  for (int n = 0; n < D / 16; ++n) wmma::fill_fragment(dk[n], 0.f), wmma::fill_fragment(dv[n], 0.f);
  for (int64_t i0 = 0; i0 < s.T; i0 += kTile) {
    __syncthreads();
    load_rounded<Op, D>(q + base, i0, kTile, s, t.X);
    load_rounded<Op, D>(gout + base, i0, kTile, s, t.Y);
    for (int c = threadIdx.x; c < kTile; c += blockDim.x) {
      const bool in = i0 + c < s.T;
      t.u1[c] = in ? lse[bh * s.T + i0 + c] : 0.f, t.u2[c] = in ? delta[bh * s.T + i0 + c] : 0.f;
    }
    __syncthreads();
    product_abt<Op, D, kTile>(t.A + w * kWarpRows * D, D, t.X, D, t.P1 + so, kScoreStride);
    product_abt<Op, D, kTile>(t.B + w * kWarpRows * D, D, t.Y, D, t.P2 + so, kScoreStride);
    __syncwarp();
    for (int c = half * kHalf; c < (half + 1) * kHalf; ++c) {
      const int64_t i = i0 + c;
      float P = 0.f, keep = 0.f;
      if (key_live && i < s.T)
        P = expf(t.P1[so + r * kScoreStride + c] * scale - t.u1[c]), keep = keep_factor<float>(s, bh, i, j);
      t.R1[po + r * kProbStride + c] = Op::round(P * keep);
      t.R2[po + r * kProbStride + c] = Op::round(P * (keep * t.P2[so + r * kScoreStride + c] - t.u2[c]));
    }
    __syncwarp();
    accumulate_ab<Op, D>(t.R1 + po, t.Y, dv);
    accumulate_ab<Op, D>(t.R2 + po, t.X, dk);
  }
  float* stage = t.stage + w * kWarpRows * D;
  const int64_t r0 = jb + w * kWarpRows;
  store_rows<Op, D>(dv, 1.f, stage, r0, s, gv + base);
  __syncwarp();
  store_rows<Op, D>(dk, scale, stage, r0, s, gk + base);
#endif
}

// dQ: block (query block, head); warp w owns queries i0 + 16 w + [0, 16) and streams the keys:
// S = q k^T, gPd = gout v^T, dS by elements, dQ += dS k.
template <typename Op, int D>
__global__ void __launch_bounds__(kWarps * 32)
    attention_dq_tc_kernel(const float* q, const float* k, const float* v, const uint8_t* mask, const float* lse,
                           const float* delta, const float* gout, AttnShape s, float* gq) {
#ifdef SA_TC_BODY
  extern __shared__ __align__(128) unsigned char smem[];
  const BackwardTiles<Op, D> t(smem);  // A: q, B: gout, X: k, Y: v; P1: S, P2: gPd; R2: dS; u1: live keys
  constexpr int kProbStride = Op::kProbStride;
  const int w = threadIdx.x / 32, lane = threadIdx.x % 32, r = lane % 16, half = lane / 16;
  const int64_t bh = blockIdx.y, b = bh / s.H, ib = int64_t{blockIdx.x} * kBlockRows, base = bh * s.T * s.d;
  const int64_t i = ib + w * kWarpRows + r;
  const float scale = static_cast<float>(s.scale);
  const float L = i < s.T ? lse[bh * s.T + i] : 0.f, Di = i < s.T ? delta[bh * s.T + i] : 0.f;
  const int so = w * kWarpRows * kScoreStride, po = w * kWarpRows * kProbStride;  // the warp's tiles
  load_rounded<Op, D>(q + base, ib, kBlockRows, s, t.A);
  load_rounded<Op, D>(gout + base, ib, kBlockRows, s, t.B);
  FragC<Op> dq[D / 16];
  for (int n = 0; n < D / 16; ++n) wmma::fill_fragment(dq[n], 0.f);
  for (int64_t j0 = 0; j0 < s.T; j0 += kTile) {
    __syncthreads();
    load_rounded<Op, D>(k + base, j0, kTile, s, t.X);
    load_rounded<Op, D>(v + base, j0, kTile, s, t.Y);
    for (int c = threadIdx.x; c < kTile; c += blockDim.x) t.u1[c] = j0 + c < s.T && mask[b * s.T + j0 + c] ? 1.f : 0.f;
    __syncthreads();
    product_abt<Op, D, kTile>(t.A + w * kWarpRows * D, D, t.X, D, t.P1 + so, kScoreStride);
    product_abt<Op, D, kTile>(t.B + w * kWarpRows * D, D, t.Y, D, t.P2 + so, kScoreStride);
    __syncwarp();
    for (int c = half * kHalf; c < (half + 1) * kHalf; ++c) {
      float ds = 0.f;
      if (t.u1[c] != 0.f && i < s.T) {
        const float P = expf(t.P1[so + r * kScoreStride + c] * scale - L);
        ds = P * (keep_factor<float>(s, bh, i, j0 + c) * t.P2[so + r * kScoreStride + c] - Di);
      }
      t.R2[po + r * kProbStride + c] = Op::round(ds);
    }
    __syncwarp();
    accumulate_ab<Op, D>(t.R2 + po, t.X, dq);
  }
  store_rows<Op, D>(dq, scale, t.stage + w * kWarpRows * D, ib + w * kWarpRows, s, gq + base);
#endif
}

template <typename Kernel>
void allow_smem(Kernel kernel, size_t bytes) {
  CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
}

// Calls f(std::integral_constant<int, D>) with the smallest tile width D >= d (a multiple of 16).
template <typename F>
void dispatch_tc_dim(int64_t d, F&& f) {
  if (d <= 16) f(std::integral_constant<int, 16>{});
  else if (d <= 32) f(std::integral_constant<int, 32>{});
  else if (d <= 64) f(std::integral_constant<int, 64>{});
  else f(std::integral_constant<int, 128>{});
}

dim3 grid_of(int64_t T, int64_t heads) {
  if (heads > 65535) fail_message("attention: " + std::to_string(heads) + " heads in a batch exceed CUDA's grid (65535)");
  return dim3(static_cast<unsigned>((T + kBlockRows - 1) / kBlockRows), static_cast<unsigned>(heads));
}

// Calls f(Bf16Operands{}) or f(Tf32Operands{}).
template <typename F>
void dispatch_operands(TcOperands ops, F&& f) {
  if (ops == TcOperands::Bf16) f(Bf16Operands{});
  else f(Tf32Operands{});
}

}  // namespace

// The device must run bf16/TF32 wmma (compute 8.0 or later, and this build must carry such code:
// a build for older targets has empty kernels) and give a block the backward's shared memory (at
// head size 128, 108 KB in bf16 and 164 KB in TF32; 100 KB in TF32 at 64: compute 8.6 and 8.9 allow
// 99 KB, 8.0 163 KB).
bool attention_tc_supported(int64_t d, TcOperands ops) {
  if (d > 128) return false;
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) return false;
  static int optin[64] = {};  // per device: 0 unknown, -1 unusable, else the opt-in shared memory
  int& known = optin[dev & 63];
  if (known == 0) {
    int major = 0, bytes = 0;
    cudaFuncAttributes f{};
    const bool ok = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) == cudaSuccess &&
                    cudaDeviceGetAttribute(&bytes, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) == cudaSuccess &&
                    cudaFuncGetAttributes(&f, attention_forward_tc_kernel<Bf16Operands, 16>) == cudaSuccess &&
                    major >= 8 && f.ptxVersion >= 80;  // the virtual architecture the kernel was compiled for
    if (!ok) cudaGetLastError();
    known = ok ? bytes : -1;
  }
  size_t need = 0;
  dispatch_operands(ops, [&](auto op) {
    using Op = decltype(op);
    dispatch_tc_dim(d, [&](auto D) { need = backward_smem<Op, D>(); });
  });
  return known > 0 && need <= static_cast<size_t>(known);
}

void attention_forward_tc(TcOperands ops, cudaStream_t stream, const float* q, const float* k, const float* v,
                          const uint8_t* mask, const AttnShape& s, int64_t heads, float* out, float* lse) {
  dispatch_operands(ops, [&](auto op) {
    using Op = decltype(op);
    dispatch_tc_dim(s.d, [&](auto D) {
      constexpr size_t bytes = forward_smem<Op, D>();
      allow_smem(attention_forward_tc_kernel<Op, D>, bytes);
      attention_forward_tc_kernel<Op, D><<<grid_of(s.T, heads), kWarps * 32, bytes, stream>>>(q, k, v, mask, s, out,
                                                                                              lse);
    });
  });
  CUDA_LAUNCHED("attention (tensor cores)");
}

void attention_backward_tc(TcOperands ops, cudaStream_t stream, const float* q, const float* k, const float* v,
                           const uint8_t* mask, const float* lse, const float* delta, const float* gout,
                           const AttnShape& s, int64_t heads, float* gq, float* gk, float* gv) {
  dispatch_operands(ops, [&](auto op) {
    using Op = decltype(op);
    dispatch_tc_dim(s.d, [&](auto D) {
      constexpr size_t bytes = backward_smem<Op, D>();
      allow_smem(attention_dkdv_tc_kernel<Op, D>, bytes);
      allow_smem(attention_dq_tc_kernel<Op, D>, bytes);
      attention_dkdv_tc_kernel<Op, D><<<grid_of(s.T, heads), kWarps * 32, bytes, stream>>>(q, k, v, mask, lse, delta,
                                                                                            gout, s, gk, gv);
      CUDA_LAUNCHED("attention_backward dk dv (tensor cores)");
      attention_dq_tc_kernel<Op, D><<<grid_of(s.T, heads), kWarps * 32, bytes, stream>>>(q, k, v, mask, lse, delta,
                                                                                          gout, s, gq);
      CUDA_LAUNCHED("attention_backward dq (tensor cores)");
    });
  });
}

}  // namespace sa::cudak

namespace sa::cuda {

bool fused_attention_on_tensor_cores(int device, int64_t head_dim, bool bf16) {
  backend_uncounted(Device::cuda(device));  // binds the device
  return cudak::attention_tc_supported(head_dim, bf16 ? cudak::TcOperands::Bf16 : cudak::TcOperands::Tf32);
}

}  // namespace sa::cuda
