// CPU: row gathers/scatters (embedding lookups, sparse gradients) and the char-CNN
// convolution with max over positions.
#include <cblas.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <unordered_map>
#include <vector>

#include "engine/cpu/cpu_backend.h"

namespace sa {

// A host tensor of ids, uncounted (Tensor::from counts an upload).
static Tensor ids_tensor(const std::vector<int32_t>& v) {
  Tensor t = Tensor::empty({static_cast<int64_t>(v.size())}, DType::I32);
  if (!v.empty()) std::memcpy(t.raw(), v.data(), v.size() * sizeof(int32_t));
  return t;
}

void CpuBackend::gather_rows(const Tensor& table, const Tensor& idx, Tensor& out) {
  const int64_t v = table.dim(0), d = table.numel() / std::max<int64_t>(v, 1), n = idx.numel();
  const int32_t* ix = idx.data<int32_t>();
  for (int64_t i = 0; i < n; ++i)
    SA_CHECK(ix[i] >= 0 && ix[i] < v, "gather_rows: index {} at position {} is outside the table's {} rows", ix[i], i,
             v);
  const size_t row = static_cast<size_t>(d) * dtype_size(table.dtype());
  const char* src = static_cast<const char*>(table.raw());
  char* dst = static_cast<char*>(out.raw());
#pragma omp parallel for if (n * d > kParallelMin)
  for (int64_t i = 0; i < n; ++i) std::memcpy(dst + i * row, src + ix[i] * row, row);
}

std::pair<Tensor, Tensor> CpuBackend::coalesce_rows(const Tensor& ids, const Tensor& rows, bool) {
  const int64_t M = ids.numel(), d = rows.dim(1);
  const int32_t* ix = ids.data<int32_t>();
  int32_t max_id = -1;
  for (int64_t i = 0; i < M; ++i) max_id = std::max(max_id, ix[i]);
  // The distinct ids in increasing order (a negative id is padding: dropped). Ids within a small
  // range (a char table, a batch's rows of a vocabulary) are numbered through a map of the range,
  // others by sorting.
  std::vector<int32_t> uniq, slot_of;
  if (max_id >= 0 && max_id < 16 * M + 4096) {
    slot_of.assign(static_cast<size_t>(max_id) + 1, -1);
    for (int64_t i = 0; i < M; ++i)
      if (ix[i] >= 0) slot_of[static_cast<size_t>(ix[i])] = 0;
    for (int32_t id = 0; id <= max_id; ++id)
      if (slot_of[static_cast<size_t>(id)] == 0) slot_of[static_cast<size_t>(id)] = static_cast<int32_t>(uniq.size()), uniq.push_back(id);
  } else {
    for (int64_t i = 0; i < M; ++i)
      if (ix[i] >= 0) uniq.push_back(ix[i]);
    std::sort(uniq.begin(), uniq.end());
    uniq.erase(std::unique(uniq.begin(), uniq.end()), uniq.end());
  }
  std::vector<int32_t> slot, kept;  // each kept entry's output row, and its position
  for (int64_t i = 0; i < M; ++i)
    if (ix[i] >= 0) {
      slot.push_back(!slot_of.empty() ? slot_of[static_cast<size_t>(ix[i])]
                                      : static_cast<int32_t>(std::lower_bound(uniq.begin(), uniq.end(), ix[i]) - uniq.begin()));
      kept.push_back(static_cast<int32_t>(i));
    }
  const int64_t U = static_cast<int64_t>(uniq.size()), K = static_cast<int64_t>(kept.size());
  // One primitive, as on a GPU: what it makes inside counts as no launch or upload of its own.
  Tensor summed = Tensor::empty({U, d}, rows.dtype(), device());
  fill(summed, 0);
  const Tensor src = K == M ? rows : Tensor::empty({K, d}, rows.dtype(), device());
  if (K < M) {
    Tensor s = src;
    gather_rows(rows, ids_tensor(kept), s);
  }
  scatter_add_rows(src, ids_tensor(slot), summed);  // in row order per column
  return {ids_tensor(uniq), summed};
}

void CpuBackend::scatter_add_rows(const Tensor& src, const Tensor& idx, Tensor& table) {
  const int64_t v = table.dim(0), d = table.numel() / std::max<int64_t>(v, 1), n = idx.numel();
  const int32_t* ix = idx.data<int32_t>();
  for (int64_t i = 0; i < n; ++i)
    SA_CHECK(ix[i] >= 0 && ix[i] < v, "scatter_add_rows: index {} at position {} is outside the table's {} rows",
             ix[i], i, v);
  dispatch_float(table.dtype(), "scatter_add_rows", [&](auto tag) {
    using T = decltype(tag);
    const T* s = src.data<T>();
    T* t = table.data<T>();
    // Blocks of 64 columns in parallel, each streaming the rows in order: duplicate indices never
    // race, and every element sums its rows in increasing order. (A thread per column had walked
    // all rows at a stride of d: a sparse gradient's coalescing took 8.5 ms of a SaELMo-small step.)
    constexpr int64_t kWidth = 64;
    const int64_t blocks = (d + kWidth - 1) / kWidth;
#pragma omp parallel for if (n * d > kParallelMin)
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t c0 = b * kWidth, c1 = std::min(d, c0 + kWidth);
      for (int64_t i = 0; i < n; ++i) {
        T* __restrict dst = t + ix[i] * d;
        const T* __restrict row = s + i * d;
        for (int64_t c = c0; c < c1; ++c) dst[c] += row[c];
      }
    }
  });
}

// The windows conv1d_max computes for one sample: windows [0, count). A sample whose last rows are
// all the same row (a token's characters padded to their fixed length with one padding row) has
// identical windows from `count - 1` on: the first of them stands for all, and the max, which keeps
// the earliest of equal values, picks the same window as over every position. Samples with the
// same rows up to there share one computation (`first`: the earlier sample with these rows).
struct ConvWindows {
  int64_t count = 0, first = -1, tail = 0;  // tail: rows [tail, L) all equal the last
};

template <typename T>
std::vector<ConvWindows> distinct_windows(const T* xs, int64_t N, int64_t L, int64_t Cin, int64_t P) {
  std::vector<ConvWindows> out(static_cast<size_t>(N));
  const size_t row = static_cast<size_t>(Cin) * sizeof(T);
  std::unordered_map<uint64_t, std::vector<int64_t>> seen;  // hash of the distinct rows -> samples
  for (int64_t n = 0; n < N; ++n) {
    const char* x = reinterpret_cast<const char*>(xs + n * L * Cin);
    const char* last = x + (L - 1) * row;
    int64_t tail = L - 1;
    while (tail > 0 && std::memcmp(x + (tail - 1) * row, last, row) == 0) --tail;
    ConvWindows& w = out[static_cast<size_t>(n)];
    w.count = std::min(P, tail + 1), w.tail = tail;
    const size_t bytes = static_cast<size_t>(tail + 1) * row;  // the rest repeats row `tail`
    uint64_t h = 0xcbf29ce484222325ULL ^ static_cast<uint64_t>(tail);
    for (size_t i = 0; i + 8 <= bytes; i += 8) {  // rows are whole floats: 8 bytes at a time, then the rest
      uint64_t v;
      std::memcpy(&v, x + i, 8);
      h = (h ^ v) * 0x100000001b3ULL;
    }
    for (size_t i = bytes & ~size_t{7}; i < bytes; ++i) h = (h ^ static_cast<unsigned char>(x[i])) * 0x100000001b3ULL;
    std::vector<int64_t>& same = seen[h];
    for (int64_t m : same)
      if (out[static_cast<size_t>(m)].tail == tail && std::memcmp(x, xs + m * L * Cin, bytes) == 0) {
        w.first = m;
        break;
      }
    if (w.first < 0) same.push_back(n);
  }
  return out;
}

// Forward: im2col of each distinct sample's distinct windows, one GEMM per chunk of them, then
// bias + max over positions. Windows are W*Cin contiguous values of x (rows of length Cin), so
// im2col is a copy of overlapping slices. At bench-small's batch this computes about a fifth of the
// windows of every position of every sample. A padded tail's windows and a repeated word's now
// get one value each: over every position, OpenBLAS's kernels could round the same window
// differently by its row in the product.
void CpuBackend::conv1d_max(const Tensor& x, const Tensor& w, const Tensor& b, Tensor& y, Tensor& argmax) {
  const int64_t N = x.dim(0), L = x.dim(1), Cin = x.dim(2), W = w.dim(0), Cout = w.dim(2), P = L - W + 1,
                K = W * Cin;
  dispatch_float(x.dtype(), "conv1d_max", [&](auto tag) {
    using T = decltype(tag);
    const T *xs = x.data<T>(), *ws = w.data<T>(), *bs = b.data<T>();
    T* ys = y.data<T>();
    int32_t* am = argmax.data<int32_t>();
    const std::vector<ConvWindows> win = distinct_windows(xs, N, L, Cin, P);
    std::vector<int64_t> todo;  // the samples computed: each first of its rows
    for (int64_t n = 0; n < N; ++n)
      if (win[static_cast<size_t>(n)].first < 0) todo.push_back(n);
    // Chunks of samples whose windows fill about 2^20 values of im2col and of the products.
    const int64_t budget = std::max<int64_t>(P, (1 << 20) / std::max(K, Cout));
    // Scratch from the caching allocator: a std::vector here zeroed megabytes and took fresh pages
    // on every call, a fifth of a bench-small step.
    Tensor cols_buf = Tensor::empty({budget * K}, x.dtype()), conv_buf = Tensor::empty({budget * Cout}, x.dtype());
    T *cols = cols_buf.data<T>(), *conv = conv_buf.data<T>();
    std::vector<int64_t> row0;  // the chunk's samples' first rows in cols and conv
    for (size_t i0 = 0; i0 < todo.size();) {
      row0.assign(1, 0);
      size_t i1 = i0;
      while (i1 < todo.size() && row0.back() + win[static_cast<size_t>(todo[i1])].count <= budget)
        row0.push_back(row0.back() + win[static_cast<size_t>(todo[i1++])].count);
      const int64_t nn = static_cast<int64_t>(i1 - i0), rows = row0.back();
#pragma omp parallel for if (rows * K > kParallelMin)
      for (int64_t s = 0; s < nn; ++s) {
        const int64_t n = todo[i0 + static_cast<size_t>(s)];
        for (int64_t p = 0; p < row0[s + 1] - row0[s]; ++p)
          std::memcpy(&cols[(row0[s] + p) * K], xs + (n * L + p) * Cin, static_cast<size_t>(K) * sizeof(T));
      }
      if constexpr (std::is_same_v<T, float>)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(rows), static_cast<int>(Cout),
                    static_cast<int>(K), 1.f, cols, static_cast<int>(K), ws, static_cast<int>(Cout), 0.f, conv,
                    static_cast<int>(Cout));
      else
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(rows), static_cast<int>(Cout),
                    static_cast<int>(K), 1.0, cols, static_cast<int>(K), ws, static_cast<int>(Cout), 0.0, conv,
                    static_cast<int>(Cout));
#pragma omp parallel for if (rows * Cout > kParallelMin)
      for (int64_t s = 0; s < nn; ++s) {
        const int64_t n = todo[i0 + static_cast<size_t>(s)];
        T* out = ys + n * Cout;
        int32_t* arg = am + n * Cout;
        for (int64_t c = 0; c < Cout; ++c) {
          out[c] = -std::numeric_limits<T>::infinity();
          arg[c] = 0;
        }
        for (int64_t p = 0; p < row0[s + 1] - row0[s]; ++p) {
          const T* row = &conv[(row0[s] + p) * Cout];
          for (int64_t c = 0; c < Cout; ++c)
            if (row[c] > out[c]) {
              out[c] = row[c];
              arg[c] = static_cast<int32_t>(p);
            }
        }
        for (int64_t c = 0; c < Cout; ++c) out[c] += bs[c];  // bias is constant over positions
      }
      i0 = i1;
    }
    for (int64_t n = 0; n < N; ++n)  // the repeated samples take their first's outputs
      if (const int64_t m = win[static_cast<size_t>(n)].first; m >= 0) {
        std::memcpy(ys + n * Cout, ys + m * Cout, static_cast<size_t>(Cout) * sizeof(T));
        std::memcpy(am + n * Cout, am + m * Cout, static_cast<size_t>(Cout) * sizeof(int32_t));
      }
  });
}

// Backward touches only the argmax window of each (sample, filter): O(N*Cout*W*Cin), no GEMM
// over all positions.
void CpuBackend::conv1d_max_backward(const Tensor& x, const Tensor& w, const Tensor& argmax, const Tensor& gy,
                                     Tensor* gx, Tensor* gw, Tensor* gb) {
  const int64_t N = x.dim(0), L = x.dim(1), Cin = x.dim(2), W = w.dim(0), Cout = w.dim(2), K = W * Cin;
  dispatch_float(x.dtype(), "conv1d_max_backward", [&](auto tag) {
    using T = decltype(tag);
    const T *xs = x.data<T>(), *ws = w.data<T>(), *g = gy.data<T>();
    const int32_t* am = argmax.data<int32_t>();
    if (gb) {
      T* gbs = gb->data<T>();
      for (int64_t c = 0; c < Cout; ++c) {
        T s = 0;
        for (int64_t n = 0; n < N; ++n) s += g[n * Cout + c];
        gbs[c] += s;
      }
    }
    // Both gradients run over a filter's K weights contiguously: w is [K, Cout], so a filter's
    // weights lie Cout apart, and stepping through them (one cache line each) made the backward 17x
    // the forward at elmo.cfg's widest filters. The sums keep their order (over n for a weight, over
    // c for an input), so the values are the same bit for bit.
    if (gw) {
      T* gws = gw->data<T>();
#pragma omp parallel if (N * Cout * K > kParallelMin)
      {
        std::vector<T> acc(static_cast<size_t>(K));
#pragma omp for
        for (int64_t c = 0; c < Cout; ++c) {
          for (int64_t k = 0; k < K; ++k) acc[static_cast<size_t>(k)] = gws[k * Cout + c];
          T* __restrict a = acc.data();
          for (int64_t n = 0; n < N; ++n) {
            const T gv = g[n * Cout + c];
            const T* __restrict win = xs + (n * L + am[n * Cout + c]) * Cin;
            for (int64_t k = 0; k < K; ++k) a[k] += gv * win[k];
          }
          for (int64_t k = 0; k < K; ++k) gws[k * Cout + c] = acc[static_cast<size_t>(k)];
        }
      }
    }
    if (gx) {
      T* gxs = gx->data<T>();
      Tensor wt_buf = Tensor::empty({Cout, K}, x.dtype());  // w transposed: filter c's weights contiguous
      T* wt = wt_buf.data<T>();
      for (int64_t k = 0; k < K; ++k)
        for (int64_t c = 0; c < Cout; ++c) wt[c * K + k] = ws[k * Cout + c];
#pragma omp parallel for if (N * Cout * K > kParallelMin)
      for (int64_t n = 0; n < N; ++n)
        for (int64_t c = 0; c < Cout; ++c) {
          const T gv = g[n * Cout + c];
          T* __restrict win = gxs + (n * L + am[n * Cout + c]) * Cin;
          const T* __restrict wc = wt + c * K;
          for (int64_t k = 0; k < K; ++k) win[k] += gv * wc[k];
        }
    }
  });
}

}  // namespace sa
