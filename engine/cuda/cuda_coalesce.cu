// CUDA: a row-sparse gradient's entries summed per id on the device. The ids are sorted with
// their positions (CUB's stable radix sort) and run heads numbered by a scan. Each distinct id's
// rows are summed in their original order, in pieces of at most kPiece rows whose partial sums
// are then added in order: a run of one id can be very long (the padding character fills most of
// a batch's char slots), and one thread per output walking it serially took milliseconds. Runs of
// up to kPiece rows therefore equal the CPU's sums bit for bit; longer ones differ by rounding.
// The host sees the count of distinct ids and their run starts (to cut the pieces).
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <vector>

#include "engine/cuda/cuda_backend.cuh"

namespace sa {
using namespace cudak;

namespace {

__global__ void iota_kernel(int32_t* p, int64_t n) {
  CUDA_LOOP(i, n) p[i] = static_cast<int32_t>(i);
}

__global__ void run_heads_kernel(const int32_t* sorted, int32_t* head, int64_t n) {
  CUDA_LOOP(i, n) head[i] = i == 0 || sorted[i] != sorted[i - 1] ? 1 : 0;
}

// run[i] = number of heads up to i: the run of position i is run[i] - 1.
__global__ void run_starts_kernel(const int32_t* sorted, const int32_t* run, int32_t* uids, int32_t* starts,
                                  int64_t n) {
  CUDA_LOOP(i, n) {
    if (i == 0 || sorted[i] != sorted[i - 1]) {
      uids[run[i] - 1] = sorted[i];
      starts[run[i] - 1] = static_cast<int32_t>(i);
    }
  }
}

constexpr int64_t kPiece = 256;

// partial[q, c] = sum of rows[perm[i], c] over piece q's sorted positions [bounds[q], bounds[q+1]).
template <typename T>
__global__ void piece_sums_kernel(const T* rows, const int32_t* perm, const int32_t* bounds, T* partial, int64_t Q,
                                  int64_t d) {
  CUDA_LOOP(e, Q * d) {
    const int64_t q = e / d, c = e % d;
    T acc = 0;
    for (int64_t i = bounds[2 * q]; i < bounds[2 * q + 1]; ++i) acc += rows[static_cast<int64_t>(perm[i]) * d + c];
    partial[e] = acc;
  }
}

// out[u, c] = sum of the partials of u's pieces [first[u], first[u+1]), in order.
template <typename T>
__global__ void run_sums_kernel(const T* partial, const int32_t* first, T* out, int64_t U, int64_t d) {
  CUDA_LOOP(e, U * d) {
    const int64_t u = e / d, c = e % d;
    T acc = 0;
    for (int64_t q = first[u]; q < first[u + 1]; ++q) acc += partial[q * d + c];
    out[e] = acc;
  }
}

}  // namespace

std::pair<Tensor, Tensor> CudaBackend::coalesce_rows(const Tensor& ids, const Tensor& rows) {
  const int64_t M = ids.numel(), d = rows.dim(1);
  const Device dev = device();
  if (M == 0) return {Tensor::empty({0}, DType::I32, dev), Tensor::empty({0, d}, rows.dtype(), dev)};
  if (M >= (int64_t{1} << 31)) fail_message("coalesce_rows: more entries than CUB's int count");
  const int n = static_cast<int>(M);
  Tensor order = Tensor::empty({M}, DType::I32, dev), sorted = Tensor::empty({M}, DType::I32, dev);
  Tensor perm = Tensor::empty({M}, DType::I32, dev), run = Tensor::empty({M}, DType::I32, dev);
  iota_kernel<<<blocks_for(M), kThreads, 0, stream_>>>(order.data<int32_t>(), M);
  CUDA_LAUNCHED("coalesce iota");
  size_t sort_bytes = 0, scan_bytes = 0;
  CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, sort_bytes, ids.data<int32_t>(), sorted.data<int32_t>(),
                                             order.data<int32_t>(), perm.data<int32_t>(), n, 0, 32, stream_));
  CUDA_CHECK(cub::DeviceScan::InclusiveSum(nullptr, scan_bytes, run.data<int32_t>(), run.data<int32_t>(), n, stream_));
  Tensor scratch = Tensor::empty({static_cast<int64_t>(std::max(sort_bytes, scan_bytes))}, DType::U8, dev);
  CUDA_CHECK(cub::DeviceRadixSort::SortPairs(scratch.raw(), sort_bytes, ids.data<int32_t>(), sorted.data<int32_t>(),
                                             order.data<int32_t>(), perm.data<int32_t>(), n, 0, 32, stream_));
  run_heads_kernel<<<blocks_for(M), kThreads, 0, stream_>>>(sorted.data<int32_t>(), run.data<int32_t>(), M);
  CUDA_LAUNCHED("coalesce run heads");
  CUDA_CHECK(cub::DeviceScan::InclusiveSum(scratch.raw(), scan_bytes, run.data<int32_t>(), run.data<int32_t>(), n,
                                           stream_));
  int32_t U = 0;
  CUDA_CHECK(cudaMemcpyAsync(&U, run.data<int32_t>() + (M - 1), sizeof U, cudaMemcpyDeviceToHost, stream_));
  counters::host_read();
  CUDA_CHECK(cudaStreamSynchronize(stream_));
  Tensor uids = Tensor::empty({U}, DType::I32, dev), starts = Tensor::empty({U}, DType::I32, dev);
  run_starts_kernel<<<blocks_for(M), kThreads, 0, stream_>>>(sorted.data<int32_t>(), run.data<int32_t>(),
                                                             uids.data<int32_t>(), starts.data<int32_t>(), M);
  CUDA_LAUNCHED("coalesce run starts");
  // Cut each run into pieces of at most kPiece sorted positions.
  std::vector<int32_t> host_starts(static_cast<size_t>(U));
  counters::host_read();
  CUDA_CHECK(cudaMemcpyAsync(host_starts.data(), starts.data<int32_t>(), sizeof(int32_t) * U, cudaMemcpyDeviceToHost,
                             stream_));
  CUDA_CHECK(cudaStreamSynchronize(stream_));
  std::vector<int32_t> bounds, first(static_cast<size_t>(U) + 1);
  for (int64_t u = 0; u < U; ++u) {
    first[static_cast<size_t>(u)] = static_cast<int32_t>(bounds.size() / 2);
    const int64_t end = u + 1 < U ? host_starts[static_cast<size_t>(u) + 1] : M;
    for (int64_t b = host_starts[static_cast<size_t>(u)]; b < end; b += kPiece) {
      bounds.push_back(static_cast<int32_t>(b));
      bounds.push_back(static_cast<int32_t>(std::min(end, b + kPiece)));
    }
  }
  const int64_t Q = static_cast<int64_t>(bounds.size() / 2);
  first[static_cast<size_t>(U)] = static_cast<int32_t>(Q);
  const Tensor qbounds = Tensor::from(bounds, {2 * Q}, dev), qfirst = Tensor::from(first, {U + 1}, dev);
  Tensor partial = Tensor::empty({Q, d}, rows.dtype(), dev);
  Tensor summed = Tensor::empty({U, d}, rows.dtype(), dev);
  dispatch(rows.dtype(), "coalesce_rows", [&](auto tag) {
    using T = decltype(tag);
    piece_sums_kernel<<<blocks_for(Q * d), kThreads, 0, stream_>>>(rows.data<T>(), perm.data<int32_t>(),
                                                                   qbounds.data<int32_t>(), partial.data<T>(), Q, d);
    run_sums_kernel<<<blocks_for(U * d), kThreads, 0, stream_>>>(partial.data<T>(), qfirst.data<int32_t>(),
                                                                 summed.data<T>(), U, d);
  });
  CUDA_LAUNCHED("coalesce run sums");
  return {uids, summed};
}

}  // namespace sa
