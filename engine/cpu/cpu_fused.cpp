// CPU: layer norm, the fused hot-path cells (LSTM pointwise math, highway combine), Adagrad, the
// candidate softmax and sense selection.
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "engine/core/bf16.h"
#include "engine/core/precision.h"
#include "engine/core/scalar_math.h"
#include "engine/cpu/cpu_backend.h"

namespace sa {

// One row of layer norm and of its input gradient: functions of their own with restrict pointers
// and SIMD reductions (inside an OpenMP region the loops stayed scalar). Sums in SIMD order:
// deterministic for a build.
template <typename T>
static void layer_norm_row(const T* __restrict xr, const T* __restrict gs, const T* __restrict bs, int64_t d, T eps,
                           T* __restrict yr, T& mean, T& rstd) {
  T m = 0, v = 0;
#pragma omp simd reduction(+ : m)
  for (int64_t k = 0; k < d; ++k) m += xr[k];
  m /= T(d);
#pragma omp simd reduction(+ : v)
  for (int64_t k = 0; k < d; ++k) v += (xr[k] - m) * (xr[k] - m);
  const T rs = T(1) / math::sqrt(v / T(d) + eps);
#pragma omp simd
  for (int64_t k = 0; k < d; ++k) yr[k] = (xr[k] - m) * rs * gs[k] + bs[k];
  mean = m, rstd = rs;
}

template <typename T>
static void layer_norm_grad_row(const T* __restrict xr, const T* __restrict gs, const T* __restrict gr, int64_t d,
                                T m, T rs, T* __restrict gxr) {
  T s1 = 0, s2 = 0;  // mean of g*gamma and of g*gamma*xhat
#pragma omp simd reduction(+ : s1, s2)
  for (int64_t k = 0; k < d; ++k) {
    const T gg = gr[k] * gs[k], xh = (xr[k] - m) * rs;
    s1 += gg;
    s2 += gg * xh;
  }
  s1 /= T(d);
  s2 /= T(d);
#pragma omp simd
  for (int64_t k = 0; k < d; ++k) {
    const T xh = (xr[k] - m) * rs;
    gxr[k] = rs * (gr[k] * gs[k] - s1 - xh * s2);
  }
}

void CpuBackend::layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps, Tensor& y,
                            Tensor& mean, Tensor& rstd) {
  dispatch_float(x.dtype(), "layer_norm", [&](auto tag) {
    using T = decltype(tag);
    const int64_t d = x.dim(-1), rows = x.numel() / d;
    const T *xs = x.data<T>(), *gs = gamma.data<T>(), *bs = beta.data<T>();
    T *ys = y.data<T>(), *ms = mean.data<T>(), *rs = rstd.data<T>();
#pragma omp parallel for if (x.numel() > kParallelMin)
    for (int64_t r = 0; r < rows; ++r) layer_norm_row(xs + r * d, gs, bs, d, T(eps), ys + r * d, ms[r], rs[r]);
  });
}

void CpuBackend::layer_norm_backward(const Tensor& x, const Tensor& gamma, const Tensor& mean, const Tensor& rstd,
                                     const Tensor& gy, Tensor* gx, Tensor* ggamma, Tensor* gbeta) {
  dispatch_float(x.dtype(), "layer_norm_backward", [&](auto tag) {
    using T = decltype(tag);
    const int64_t d = x.dim(-1), rows = x.numel() / d;
    const T *xs = x.data<T>(), *gs = gamma.data<T>(), *ms = mean.data<T>(), *rs = rstd.data<T>(),
            *g = gy.data<T>();
    if (gx) {
      T* gxs = gx->data<T>();
#pragma omp parallel for if (x.numel() > kParallelMin)
      for (int64_t r = 0; r < rows; ++r) layer_norm_grad_row(xs + r * d, gs, g + r * d, d, ms[r], rs[r], gxs + r * d);
    }
    if (ggamma || gbeta) {
      // Sums over rows, in row order, for a block of columns at a time: contiguous reads (a
      // column at a time strode across every row).
      T* gga = ggamma ? ggamma->data<T>() : nullptr;
      T* gbe = gbeta ? gbeta->data<T>() : nullptr;
      constexpr int64_t kBlock = 64;
#pragma omp parallel for if (x.numel() > kParallelMin)
      for (int64_t k0 = 0; k0 < d; k0 += kBlock) {
        const int64_t k1 = std::min(d, k0 + kBlock);
        T sa_[kBlock] = {}, sb[kBlock] = {};
        for (int64_t r = 0; r < rows; ++r) {
          const T* gr = g + r * d;
          const T* xr = xs + r * d;
          const T m = ms[r], rsr = rs[r];
          for (int64_t k = k0; k < k1; ++k) {
            sa_[k - k0] += gr[k] * (xr[k] - m) * rsr;
            sb[k - k0] += gr[k];
          }
        }
        for (int64_t k = k0; k < k1; ++k) {
          if (gga) gga[k] = sa_[k - k0];
          if (gbe) gbe[k] = sb[k - k0];
        }
      }
    }
  });
}

// One row of the cell (H units). Separate functions with restrict pointers: loops inside an
// OpenMP region lose that information and stay scalar.
template <typename T>
static void lstm_row(const T* __restrict g, const T* __restrict cp, T* __restrict c, T* __restrict h, int64_t H, T fb,
                     T clip) {
  for (int64_t k = 0; k < H; ++k) {
    auto a = math::lstm_gates<T>(g[k], g[H + k], g[2 * H + k], g[3 * H + k], cp[k], fb);
    T cc = math::clip_cell<T>(a.c_raw, clip);
    c[k] = cc;
    h[k] = a.o * math::tanh(cc);
  }
}

// gc and gcp may be one buffer (d c read before d c_prev is written over it): not __restrict.
template <typename T>
static void lstm_row_backward(const T* __restrict g, const T* __restrict cp, const T* __restrict c, const T* gc,
                              const T* __restrict gh, T* __restrict gg, T* gcp, int64_t H, T fb, T clip) {
  for (int64_t k = 0; k < H; ++k) {
    auto d = math::lstm_cell_grads<T>(g[k], g[H + k], g[2 * H + k], g[3 * H + k], cp[k], c[k], fb, clip, gc[k], gh[k]);
    gg[k] = d.di, gg[H + k] = d.dj, gg[2 * H + k] = d.df, gg[3 * H + k] = d.do_;
    gcp[k] = d.dc_prev;
  }
}

// A row's bf16 copy, as the cast to bf16 makes it (the GEMM operand precision = "bf16" takes).
static void round_row(const float* x, uint16_t* out, int64_t n) {
  for (int64_t k = 0; k < n; ++k) out[k] = float_to_bf16(x[k]);
}

static void check_bf16_copy(const char* op, const Tensor& x, const Tensor* copy) {
  if (!copy) return;
  SA_CHECK(x.dtype() == DType::F32 && copy->dtype() == DType::BF16 && copy->numel() == x.numel(),
           "{}: the bf16 copy {} of {} (expected bf16 of an f32 tensor's size)", op, describe(*copy), describe(x));
}

void CpuBackend::lstm_cell(const Tensor& gates, const Tensor& c_prev, double forget_bias, double cell_clip, Tensor& c,
                           Tensor& h, Tensor* h_bf16) {
  check_bf16_copy("lstm_cell", h, h_bf16);
  dispatch_float(gates.dtype(), "lstm_cell", [&](auto tag) {
    using T = decltype(tag);
    const int64_t H = c_prev.dim(-1), N = c_prev.numel() / H;
    const T *gs = gates.data<T>(), *cp = c_prev.data<T>();
    T *cs = c.data<T>(), *hs = h.data<T>();
    uint16_t* hb = h_bf16 ? static_cast<uint16_t*>(h_bf16->raw()) : nullptr;
#pragma omp parallel for if (N * H > kParallelMin)
    for (int64_t n = 0; n < N; ++n) {
      lstm_row<T>(gs + n * 4 * H, cp + n * H, cs + n * H, hs + n * H, H, T(forget_bias), T(cell_clip));
      if constexpr (std::is_same_v<T, float>)
        if (hb) round_row(hs + n * H, hb + n * H, H);  // while the row is in cache
    }
  });
}

void CpuBackend::lstm_cell_backward(const Tensor& gates, const Tensor& c_prev, const Tensor& c, double forget_bias,
                                    double cell_clip, const Tensor* gc, const Tensor* gh, Tensor& ggates,
                                    Tensor* gc_prev, Tensor* ggates_bf16) {
  check_bf16_copy("lstm_cell_backward", ggates, ggates_bf16);
  dispatch_float(gates.dtype(), "lstm_cell_backward", [&](auto tag) {
    using T = decltype(tag);
    const int64_t H = c_prev.dim(-1), N = c_prev.numel() / H;
    // Missing gradients read as zeros and an unwanted d c_prev goes to scratch: no branches per unit.
    Tensor zeros = (gc && gh) ? Tensor() : Tensor::zeros(c_prev.shape(), c_prev.dtype());
    Tensor scratch = gc_prev ? Tensor() : Tensor::empty(c_prev.shape(), c_prev.dtype());
    const T *gs = gates.data<T>(), *cp = c_prev.data<T>(), *cs = c.data<T>();
    const T* gcs = (gc ? *gc : zeros).template data<T>();
    const T* ghs = (gh ? *gh : zeros).template data<T>();
    T* gg = ggates.data<T>();
    T* gcp = (gc_prev ? *gc_prev : scratch).template data<T>();
    uint16_t* gb = ggates_bf16 ? static_cast<uint16_t*>(ggates_bf16->raw()) : nullptr;
#pragma omp parallel for if (N * H > kParallelMin)
    for (int64_t n = 0; n < N; ++n) {
      lstm_row_backward<T>(gs + n * 4 * H, cp + n * H, cs + n * H, gcs + n * H, ghs + n * H, gg + n * 4 * H,
                           gcp + n * H, H, T(forget_bias), T(cell_clip));
      if constexpr (std::is_same_v<T, float>)
        if (gb) round_row(gg + n * 4 * H, gb + n * 4 * H, 4 * H);
    }
  });
}

void CpuBackend::lstm_output(const Tensor& m, double proj_clip, Tensor& y, Tensor* y_bf16) {
  check_bf16_copy("lstm_output", y, y_bf16);
  dispatch_float(m.dtype(), "lstm_output", [&](auto tag) {
    using T = decltype(tag);
    const int64_t n = m.numel();
    const T* ms = m.data<T>();
    T* ys = y.data<T>();
    const T lo = T(-proj_clip), hi = T(proj_clip);
    if (proj_clip > 0)
      for (int64_t i = 0; i < n; ++i) ys[i] = math::unary<T>(UnaryOp::Clip, ms[i], lo, hi);
    else if (ys != ms)
      std::copy_n(ms, n, ys);
    if constexpr (std::is_same_v<T, float>)
      if (y_bf16) round_row(ys, static_cast<uint16_t*>(y_bf16->raw()), n);
  });
}

void CpuBackend::lstm_output_backward(const Tensor& m, const Tensor* gy, const Tensor& grec, double proj_clip,
                                      Tensor& gm, Tensor* gm_bf16) {
  check_bf16_copy("lstm_output_backward", gm, gm_bf16);
  dispatch_float(m.dtype(), "lstm_output_backward", [&](auto tag) {
    using T = decltype(tag);
    const int64_t n = m.numel();
    const T *ms = m.data<T>(), *gr = grec.data<T>(), *gys = gy ? gy->data<T>() : nullptr;
    T* out = gm.data<T>();
    const T lo = T(-proj_clip), hi = T(proj_clip);
    // As the unfused chain computes it: (grec + gy), then times the clip's 0/1 derivative.
    for (int64_t i = 0; i < n; ++i) {
      const T g = gys ? gr[i] + gys[i] : gr[i];
      out[i] = proj_clip > 0 ? g * math::unary_grad<T>(UnaryOp::Clip, ms[i], ms[i], lo, hi) : g;
    }
    if constexpr (std::is_same_v<T, float>)
      if (gm_bf16) round_row(out, static_cast<uint16_t*>(gm_bf16->raw()), n);
  });
}

void CpuBackend::highway(const Tensor& carry, const Tensor& transform, const Tensor& x, Tensor& y) {
  dispatch_float(x.dtype(), "highway", [&](auto tag) {
    using T = decltype(tag);
    const T *__restrict a = carry.data<T>(), *__restrict b = transform.data<T>(), *__restrict xs = x.data<T>();
    T* __restrict ys = y.data<T>();
    const int64_t n = x.numel();
#pragma omp parallel for if (n > kParallelMin)
    for (int64_t i = 0; i < n; ++i) ys[i] = math::highway(a[i], b[i], xs[i]);
  });
}

void CpuBackend::highway_backward(const Tensor& carry, const Tensor& transform, const Tensor& x, const Tensor& gy,
                                  Tensor& gcarry, Tensor& gtransform, Tensor& gx) {
  dispatch_float(x.dtype(), "highway_backward", [&](auto tag) {
    using T = decltype(tag);
    const T *__restrict a = carry.data<T>(), *__restrict b = transform.data<T>(), *__restrict xs = x.data<T>(),
            *__restrict g = gy.data<T>();
    T *__restrict ga = gcarry.data<T>(), *__restrict gb = gtransform.data<T>(), *__restrict gxs = gx.data<T>();
    const int64_t n = x.numel();
#pragma omp parallel for if (n > kParallelMin)
    for (int64_t i = 0; i < n; ++i) {
      auto d = math::highway_grads(a[i], b[i], xs[i], g[i]);
      ga[i] = d.dcarry, gb[i] = d.dtransform, gxs[i] = d.dx;
    }
  });
}

template <typename T>
static void adagrad_span(T* __restrict w, T* __restrict acc, const T* __restrict g, int64_t n, T lr) {
  for (int64_t i = 0; i < n; ++i) w[i] = math::adagrad(w[i], acc[i], g[i], lr);
}

void CpuBackend::adagrad(Tensor& w, Tensor& acc, const Tensor& g, double lr) {
  dispatch_float(w.dtype(), "adagrad", [&](auto tag) {
    using T = decltype(tag);
    const int64_t n = w.numel(), chunk = 1 << 14;
#pragma omp parallel for if (n > kParallelMin)
    for (int64_t i = 0; i < n; i += chunk)
      adagrad_span<T>(w.data<T>() + i, acc.data<T>() + i, g.data<T>() + i, std::min(chunk, n - i), T(lr));
  });
}

void CpuBackend::adagrad_rows(Tensor& w, Tensor& acc, const Tensor& ids, const Tensor& g, double lr) {
  const int64_t v = w.dim(0), d = w.numel() / std::max<int64_t>(v, 1), n = ids.numel();
  const int32_t* ix = ids.data<int32_t>();
  for (int64_t i = 0; i < n; ++i)  // id -1 is padding (coalesce_rows), skipped
    SA_CHECK(ix[i] >= -1 && ix[i] < v, "adagrad_rows: row {} is outside the table's {} rows", ix[i], v);
  dispatch_float(w.dtype(), "adagrad_rows", [&](auto tag) {
    using T = decltype(tag);
#pragma omp parallel for if (n * d > kParallelMin)
    for (int64_t i = 0; i < n; ++i)
      if (ix[i] >= 0) adagrad_span<T>(w.data<T>() + ix[i] * d, acc.data<T>() + ix[i] * d, g.data<T>() + i * d, d, T(lr));
  });
}

}  // namespace sa

// ---- candidate softmax (the sampled softmax's fused path) ----

namespace sa {

namespace {

// Rows per chunk: the scratch logits [rows, S] stay near 2^21 elements (8 MiB in f32: all 640 rows at
// S = 1024, 256 at 8192). Chunks of 2^18 (32 rows at the paper's 8,192 negatives) ran its products
// at 32 rows each and took 1.6x as long for a forward and backward.
int64_t candidate_chunk(int64_t S) { return std::clamp<int64_t>((int64_t{1} << 21) / std::max<int64_t>(S, 1), 64, 1024); }

// Row n's H own logits into t (-inf when absent); returns their maximum.
template <typename T>
T own_logits(const T* x, const T* wt, const T* bt, const int32_t* own, int64_t n, int64_t P, int64_t H, T* t) {
  T m = T(-INFINITY);
  for (int64_t h = 0; h < H; ++h) {
    t[h] = T(-INFINITY);
    if (own[h] < 0) continue;
    T v = bt[n * H + h];
    for (int64_t k = 0; k < P; ++k) v += x[n * P + k] * wt[(n * H + h) * P + k];
    t[h] = v;
    m = v > m ? v : m;
  }
  return m;
}

// Per row of a chunk whose candidate logits (without bias) are in L [c, S]: the H own logits go to
// t_out [c, H] (-inf when absent), and after the call L holds logit - lse for the candidates (-inf
// for accidental hits). The forward computes lse into `lse` (rows r0..); the backward passes the
// forward's (`known`) and skips it.
template <typename T>
void candidate_rows(const T* x, const T* wt, const T* bt, const T* bc, const int32_t* oid, const int32_t* cid,
                    int64_t r0, int64_t c, int64_t P, int64_t S, int64_t H, T* L, T* t_out, T* lse, bool known) {
#pragma omp parallel for if (c * S > 4096)
  for (int64_t i = 0; i < c; ++i) {
    const int64_t n = r0 + i;
    const int32_t* own = oid + n * H;
    T* t = t_out + i * H;
    T m = own_logits(x, wt, bt, own, n, P, H, t);
    T* l = L + i * S;
    // The loops over the S candidates are SIMD (one own row, the sampled softmax's case, takes
    // the branch-free first loop): the scalar loops took as long as the logits' GEMM.
    if (H == 1) {
      const int32_t o = own[0];
#pragma omp simd reduction(max : m)
      for (int64_t s = 0; s < S; ++s) {
        l[s] = cid[s] == o ? T(-INFINITY) : l[s] + bc[s];
        m = l[s] > m ? l[s] : m;
      }
    } else {
      for (int64_t s = 0; s < S; ++s) {
        bool hit = false;
        for (int64_t h = 0; h < H; ++h) hit |= cid[s] == own[h];
        l[s] = hit ? T(-INFINITY) : l[s] + bc[s];
        m = l[s] > m ? l[s] : m;
      }
    }
    if (!known) {
      T sum = 0;
      for (int64_t h = 0; h < H; ++h) sum += math::exp(t[h] - m);  // exp(-inf) = 0
      T cand = 0;
#pragma omp simd reduction(+ : cand)
      for (int64_t s = 0; s < S; ++s) cand += math::exp(l[s] - m);
      lse[n] = m + math::log(sum + cand);
    }
    const T shift = lse[n];
#pragma omp simd
    for (int64_t s = 0; s < S; ++s) l[s] -= shift;
  }
}

}  // namespace

void CpuBackend::candidate_softmax(const Tensor& x, const Tensor& wt, const Tensor& bt, const Tensor& Wc,
                                   const Tensor& bc, const Tensor& own_ids, const Tensor& cand_ids, const Tensor& own_w,
                                   Tensor& loss, Tensor& lse, Tensor* logp) {
  const int64_t N = x.dim(0), P = x.dim(1), S = Wc.dim(0);
  if (N == 0) return;
  const int64_t H = own_ids.numel() / N;
  // precision = "bf16": the logits' product rounds x and Wc, as ops::matmul does in the unfused form
  const Tensor xo = gemm_operand(x), Wco = gemm_operand(Wc);
  dispatch_float(x.dtype(), "candidate_softmax", [&](auto tag) {
    using T = decltype(tag);
    const int64_t chunk = candidate_chunk(S);
    // Scratch for a chunk's logits, unless they go to (or come from) the kept log probabilities.
    const Tensor logits =
        logp && S > 0 ? Tensor() : Tensor::empty({std::min(N, chunk), std::max<int64_t>(S, 1)}, x.dtype());
    std::vector<T> t(static_cast<size_t>(chunk * H));
    const T* w = own_w.data<T>();
    for (int64_t r0 = 0; r0 < N; r0 += chunk) {
      const int64_t c = std::min(chunk, N - r0);
      Tensor L = logp && S > 0 ? logp->rows(r0, r0 + c) : logits.rows(0, c);  // the kept rows, or scratch
      if (S > 0) {
        GemmArgs g;
        g.trans_b = true, g.m = c, g.n = S, g.k = P;
        gemm(g, xo.rows(r0, r0 + c), Wco, L);
      }
      candidate_rows<T>(x.data<T>(), wt.data<T>(), bt.data<T>(), bc.data<T>(), own_ids.data<int32_t>(),
                        cand_ids.data<int32_t>(), r0, c, P, S, H, L.data<T>(), t.data(), lse.data<T>(), false);
      for (int64_t i = 0; i < c; ++i) {
        const int64_t n = r0 + i;
        T target = 0;
        for (int64_t h = 0; h < H; ++h)
          if (own_ids.data<int32_t>()[n * H + h] >= 0) target += w[n * H + h] * t[i * H + h];
        loss.data<T>()[n] = lse.data<T>()[n] - target;
      }
    }
  });
}

void CpuBackend::candidate_softmax_backward(const Tensor& x, const Tensor& wt, const Tensor& bt, const Tensor& Wc,
                                            const Tensor& bc, const Tensor& own_ids, const Tensor& cand_ids,
                                            const Tensor& own_w, const Tensor& lse, const Tensor& gloss, Tensor& gx,
                                            Tensor& gwt, Tensor& gbt, Tensor& gWc, Tensor& gbc, Tensor* logp) {
  const int64_t N = x.dim(0), P = x.dim(1), S = Wc.dim(0);
  fill(gWc, 0);
  fill(gbc, 0);
  if (N == 0) return;
  const int64_t H = own_ids.numel() / N;
  const Tensor xo = gemm_operand(x), Wco = gemm_operand(Wc);  // as the forward's product
  dispatch_float(x.dtype(), "candidate_softmax_backward", [&](auto tag) {
    using T = decltype(tag);
    const int64_t chunk = candidate_chunk(S);
    // Scratch for a chunk's logits, unless they go to (or come from) the kept log probabilities.
    const Tensor logits =
        logp && S > 0 ? Tensor() : Tensor::empty({std::min(N, chunk), std::max<int64_t>(S, 1)}, x.dtype());
    std::vector<T> t(static_cast<size_t>(chunk * H));
    const T *xs = x.data<T>(), *wts = wt.data<T>(), *gl = gloss.data<T>(), *w = own_w.data<T>();
    const int32_t* oid = own_ids.data<int32_t>();
    T* le = lse.data<T>();  // read only: candidate_rows with known = true
    T *gxs = gx.data<T>(), *gwts = gwt.data<T>(), *gbts = gbt.data<T>(), *gbcs = gbc.data<T>();
    for (int64_t r0 = 0; r0 < N; r0 += chunk) {
      const int64_t c = std::min(chunk, N - r0);
      Tensor gxc = gx.rows(r0, r0 + c);
      Tensor L;
      if (logp && S > 0) {  // the forward kept the log probabilities: only the own logits again
        L = logp->rows(r0, r0 + c);
        for (int64_t i = 0; i < c; ++i) own_logits(xs, wts, bt.data<T>(), oid + (r0 + i) * H, r0 + i, P, H, &t[i * H]);
      } else {
        L = logits.rows(0, c);
        if (S > 0) {
          GemmArgs g;
          g.trans_b = true, g.m = c, g.n = S, g.k = P;
          gemm(g, xo.rows(r0, r0 + c), Wco, L);
        }
        candidate_rows<T>(xs, wts, bt.data<T>(), bc.data<T>(), oid, cand_ids.data<int32_t>(), r0, c, P, S, H,
                          L.data<T>(), t.data(), le, true);
      }
      // dlogit = g * softmax (candidates, in place of L); own logit h: g * (p_h - w_h), 0 when absent.
      T* l = L.data<T>();
#pragma omp parallel for if (c * S > 4096)
      for (int64_t i = 0; i < c; ++i) {
        const int64_t n = r0 + i;
        T* li = l + i * S;
        const T gn = gl[n];
#pragma omp simd
        for (int64_t s = 0; s < S; ++s) li[s] = gn * math::exp(li[s]);
        for (int64_t h = 0; h < H; ++h) {
          const int64_t j = n * H + h;
          const T dt = oid[j] < 0 ? T(0) : gl[n] * (math::exp(t[i * H + h] - le[n]) - w[j]);
          gbts[j] = dt;
          for (int64_t k = 0; k < P; ++k) gwts[j * P + k] = dt * xs[n * P + k];
        }
      }
      if (S > 0) {
        const Tensor Lo = gemm_operand(L);  // dL as the products take it (the bias sum below: f32)
        GemmArgs gx_args;  // gx = dL @ Wc
        gx_args.m = c, gx_args.n = P, gx_args.k = S;
        gemm(gx_args, Lo, Wco, gxc);
        GemmArgs gw_args;  // gWc += dL^T @ x
        gw_args.trans_a = true, gw_args.m = S, gw_args.n = P, gw_args.k = c, gw_args.beta = 1;
        gemm(gw_args, Lo, xo.rows(r0, r0 + c), gWc);
        for (int64_t i = 0; i < c; ++i) {
          const T* li = l + i * S;
#pragma omp simd
          for (int64_t s = 0; s < S; ++s) gbcs[s] += li[s];
        }
      } else {
        fill(gxc, 0);
      }
      for (int64_t i = 0; i < c; ++i) {
        const int64_t n = r0 + i;
        for (int64_t h = 0; h < H; ++h)
          for (int64_t k = 0; k < P; ++k) gxs[n * P + k] += gbts[n * H + h] * wts[(n * H + h) * P + k];
      }
    }
  });
}

void CpuBackend::select_rows(const Tensor& u, const Tensor& v, const Tensor& rows, const Tensor& enabled,
                             Tensor& out) {
  const int64_t N = u.dim(0), d = u.dim(1), K = N ? rows.numel() / N : 0;
  dispatch_float(u.dtype(), "select_rows", [&](auto tag) {
    using T = decltype(tag);
    const T *us = u.data<T>(), *vs = v.data<T>();
    const int32_t* rs = rows.data<int32_t>();
    const uint8_t* es = enabled.data<uint8_t>();
    int32_t* os = out.data<int32_t>();
#pragma omp parallel for if (N * K * d > kParallelMin)
    for (int64_t n = 0; n < N; ++n)
      os[n] = rs[n * K + math::select_by_cosine(us + n * d, vs + n * K * d, es + n * K, K, d)];
  });
}

// The CPU runs the same steps one after the other: selection, the selected rows, the chunked
// candidate softmax.
void CpuBackend::select_candidate_softmax(const Tensor& x, const Tensor& W, const Tensor& b, const Tensor& u,
                                          const Tensor& v, const Tensor& rows, const Tensor& enabled, const Tensor& Wc,
                                          const Tensor& bc, const Tensor& cand_ids, Tensor& loss, Tensor& lse,
                                          Tensor& selected) {
  const int64_t N = x.dim(0), P = x.dim(1);
  select_rows(u, v, rows, enabled, selected);
  Tensor wt = Tensor::empty({N, P}, x.dtype(), x.device()), bt = Tensor::empty({N, 1}, x.dtype(), x.device());
  gather_rows(W, selected, wt);
  gather_rows(b, selected, bt);
  Tensor ones = Tensor::full({N}, 1.0, x.dtype(), x.device());
  candidate_softmax(x, wt, bt, Wc, bc, selected, cand_ids, ones, loss, lse);
}

}  // namespace sa
