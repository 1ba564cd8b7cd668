// CUDA: a row-sparse gradient's entries summed per id on the device. The ids are sorted with
// their positions (CUB's stable radix sort) and run heads numbered by a scan. Each distinct id's
// rows are summed in their original order, in pieces of at most kPiece rows whose partial sums
// are then added in order: a run of one id can be very long (the padding character fills most of
// a batch's char slots), and one thread per output walking it serially took milliseconds. Runs of
// up to kPiece rows therefore equal the CPU's sums bit for bit; longer ones differ by rounding.
// The pieces are cut on the device (a second scan numbers them), so the only host read is the
// count of distinct ids, and none when padding is allowed: the result then has one slot per entry,
// the distinct ids first and -1 with zero rows after them. Negative ids are padding and dropped.
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

#include <algorithm>

#include "engine/cuda/cuda_backend.cuh"

namespace sa {
using namespace cudak;

namespace {

constexpr int64_t kPiece = 256;

__global__ void iota_kernel(int32_t* p, int64_t n) {
  CUDA_LOOP(i, n) p[i] = static_cast<int32_t>(i);
}

// head[i] = 1 where a run of one (non-negative) id starts in the sorted ids.
__global__ void run_heads_kernel(const int32_t* sorted, int32_t* head, int64_t n) {
  CUDA_LOOP(i, n) head[i] = sorted[i] >= 0 && (i == 0 || sorted[i] != sorted[i - 1]) ? 1 : 0;
}

// run[i] = number of heads up to i: position i belongs to run run[i] - 1 (negative ids: run 0,
// none). Writes each run's id and first position, and marks where pieces start: at a run's head
// and every kPiece positions after it.
__global__ void run_starts_kernel(const int32_t* sorted, const int32_t* run, int32_t* uids, int32_t* starts,
                                  int64_t n) {
  CUDA_LOOP(i, n) {
    if (sorted[i] >= 0 && (i == 0 || sorted[i] != sorted[i - 1])) {
      uids[run[i] - 1] = sorted[i];
      starts[run[i] - 1] = static_cast<int32_t>(i);
    }
  }
}

__global__ void piece_heads_kernel(const int32_t* sorted, const int32_t* run, const int32_t* starts, int32_t* ph,
                                   int64_t n) {
  CUDA_LOOP(i, n) ph[i] = sorted[i] >= 0 && (i - starts[run[i] - 1]) % kPiece == 0 ? 1 : 0;
}

// pidx[i] = number of piece heads up to i (scan of ph). Piece q = pidx[i] - 1 spans sorted
// positions bounds[2q] .. bounds[2q + 1]; first[u] is run u's first piece, and first[U] = Q.
__global__ void piece_bounds_kernel(const int32_t* sorted, const int32_t* run, const int32_t* ph, const int32_t* pidx,
                                    int32_t* bounds, int32_t* first, int64_t n) {
  CUDA_LOOP(i, n) {
    if (sorted[i] < 0) continue;
    const int32_t q = pidx[i] - 1;
    if (ph[i]) {
      bounds[2 * q] = static_cast<int32_t>(i);
      if (i == 0 || sorted[i] != sorted[i - 1]) first[run[i] - 1] = q;
    }
    if (i == n - 1 || ph[i + 1]) bounds[2 * q + 1] = static_cast<int32_t>(i + 1);
    if (i == n - 1) first[run[i]] = pidx[i];  // first[U] = Q
  }
}

// partial[q, c] = sum of rows[perm[i], c] over piece q's sorted positions (pieces q < Q only;
// Q = the count of piece heads, pidx[n - 1]).
template <typename T>
__global__ void piece_sums_kernel(const T* rows, const int32_t* perm, const int32_t* bounds, const int32_t* pidx,
                                  T* partial, int64_t capacity, int64_t n, int64_t d) {
  const int64_t Q = pidx[n - 1];
  CUDA_LOOP(e, capacity * d) {
    const int64_t q = e / d, c = e % d;
    if (q >= Q) continue;
    T acc = 0;
    for (int64_t i = bounds[2 * q]; i < bounds[2 * q + 1]; ++i) acc += rows[static_cast<int64_t>(perm[i]) * d + c];
    partial[e] = acc;
  }
}

// out[u, c] = sum of the partials of u's pieces [first[u], first[u+1]), in order, for u < U
// (U = run[n - 1]); the padding slots u >= U get id -1 and zero rows. w = max(d, 1), so that the
// padding ids are written for rows of width 0 too.
template <typename T>
__global__ void run_sums_kernel(const T* partial, const int32_t* first, const int32_t* run, int32_t* uids, T* out,
                                int64_t slots, int64_t n, int64_t d, int64_t w) {
  const int64_t U = run[n - 1];
  CUDA_LOOP(e, slots * w) {
    const int64_t u = e / w, c = e % w;
    if (c >= d) {
      if (u >= U) uids[u] = -1;
      continue;
    }
    if (u >= U) {
      out[u * d + c] = T(0);
      if (c == 0) uids[u] = -1;
      continue;
    }
    T acc = 0;
    for (int64_t q = first[u]; q < first[u + 1]; ++q) acc += partial[q * d + c];
    out[u * d + c] = acc;
  }
}

}  // namespace

std::pair<Tensor, Tensor> CudaBackend::coalesce_rows(const Tensor& ids, const Tensor& rows, bool allow_padding) {
  const int64_t M = ids.numel(), d = rows.dim(1);
  const Device dev = device();
  if (M == 0) return {Tensor::empty({0}, DType::I32, dev), Tensor::empty({0, d}, rows.dtype(), dev)};
  // int32 positions, and piece bounds at 2 q (q < M)
  if (M >= (int64_t{1} << 30)) fail_message("coalesce_rows: more than 2^30 entries");
  const int n = static_cast<int>(M);
  auto i32 = [&](int64_t k) { return Tensor::empty({k}, DType::I32, dev); };
  Tensor order = i32(M), sorted = i32(M), perm = i32(M), run = i32(M), starts = i32(M), ph = i32(M), pidx = i32(M);
  Tensor bounds = i32(2 * M), first = i32(M + 1);
  iota_kernel<<<blocks_for(M), kThreads, 0, stream()>>>(order.data<int32_t>(), M);
  CUDA_LAUNCHED("coalesce iota");
  size_t sort_bytes = 0, scan_bytes = 0;
  CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, sort_bytes, ids.data<int32_t>(), sorted.data<int32_t>(),
                                             order.data<int32_t>(), perm.data<int32_t>(), n, 0, 32, stream()));
  CUDA_CHECK(cub::DeviceScan::InclusiveSum(nullptr, scan_bytes, run.data<int32_t>(), run.data<int32_t>(), n, stream()));
  Tensor scratch = Tensor::empty({static_cast<int64_t>(std::max(sort_bytes, scan_bytes))}, DType::U8, dev);
  CUDA_CHECK(cub::DeviceRadixSort::SortPairs(scratch.raw(), sort_bytes, ids.data<int32_t>(), sorted.data<int32_t>(),
                                             order.data<int32_t>(), perm.data<int32_t>(), n, 0, 32, stream()));
  run_heads_kernel<<<blocks_for(M), kThreads, 0, stream()>>>(sorted.data<int32_t>(), run.data<int32_t>(), M);
  CUDA_LAUNCHED("coalesce run heads");
  CUDA_CHECK(cub::DeviceScan::InclusiveSum(scratch.raw(), scan_bytes, run.data<int32_t>(), run.data<int32_t>(), n,
                                           stream()));
  Tensor uids = i32(M);  // one slot per entry; the distinct ids first
  run_starts_kernel<<<blocks_for(M), kThreads, 0, stream()>>>(sorted.data<int32_t>(), run.data<int32_t>(),
                                                             uids.data<int32_t>(), starts.data<int32_t>(), M);
  CUDA_LAUNCHED("coalesce run starts");
  piece_heads_kernel<<<blocks_for(M), kThreads, 0, stream()>>>(sorted.data<int32_t>(), run.data<int32_t>(),
                                                              starts.data<int32_t>(), ph.data<int32_t>(), M);
  CUDA_LAUNCHED("coalesce piece heads");
  CUDA_CHECK(cub::DeviceScan::InclusiveSum(scratch.raw(), scan_bytes, ph.data<int32_t>(), pidx.data<int32_t>(), n,
                                           stream()));
  piece_bounds_kernel<<<blocks_for(M), kThreads, 0, stream()>>>(sorted.data<int32_t>(), run.data<int32_t>(),
                                                               ph.data<int32_t>(), pidx.data<int32_t>(),
                                                               bounds.data<int32_t>(), first.data<int32_t>(), M);
  CUDA_LAUNCHED("coalesce piece bounds");
  // Without padding the caller gets exactly U slots: the one host read.
  int64_t slots = M;
  if (!allow_padding) {
    int32_t U = 0;
    if (capturing()) capture_read();
    const cuda::HostMeeting meeting;  // one pause of a recorded step for both calls
    // Into pageable memory: the copy itself waits for the stream.
    CUDA_WAIT(cudaMemcpyAsync(&U, run.data<int32_t>() + (M - 1), sizeof U, cudaMemcpyDeviceToHost, stream()));
    counters::host_read();
    CUDA_WAIT(cudaStreamSynchronize(stream()));
    slots = U;
  }
  Tensor partial = Tensor::empty({M, d}, rows.dtype(), dev);  // Q <= M pieces
  Tensor summed = Tensor::empty({slots, d}, rows.dtype(), dev);
  if (slots == 0) return {uids.rows(0, 0), summed};
  dispatch(rows.dtype(), "coalesce_rows", [&](auto tag) {
    using T = decltype(tag);
    piece_sums_kernel<<<blocks_for(M * d), kThreads, 0, stream()>>>(rows.data<T>(), perm.data<int32_t>(),
                                                                   bounds.data<int32_t>(), pidx.data<int32_t>(),
                                                                   partial.data<T>(), M, M, d);
    const int64_t w = std::max<int64_t>(d, 1);
    run_sums_kernel<<<blocks_for(slots * w), kThreads, 0, stream()>>>(partial.data<T>(), first.data<int32_t>(),
                                                                     run.data<int32_t>(), uids.data<int32_t>(),
                                                                     summed.data<T>(), slots, M, d, w);
  });
  CUDA_LAUNCHED("coalesce run sums");
  return {slots == M ? uids : uids.rows(0, slots), summed};
}

}  // namespace sa
