// CUDA: a row-sparse gradient's entries summed per id on the device. The ids are sorted with
// their positions (CUB's stable radix sort), run heads numbered by a scan, and each distinct id's
// rows summed in their original order, so the sums equal the CPU's, and the only host round trip
// is the count of distinct ids. It replaced a host map that cost ~25 ms of a paper-size step.
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

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

// out[u, c] = sum of rows[perm[i], c] over the run of u, in order.
template <typename T>
__global__ void run_sums_kernel(const T* rows, const int32_t* perm, const int32_t* starts, T* out, int64_t U,
                                int64_t M, int64_t d) {
  CUDA_LOOP(e, U * d) {
    const int64_t u = e / d, c = e % d, end = u + 1 < U ? starts[u + 1] : M;
    T acc = 0;
    for (int64_t i = starts[u]; i < end; ++i) acc += rows[static_cast<int64_t>(perm[i]) * d + c];
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
  CUDA_CHECK(cudaStreamSynchronize(stream_));
  Tensor uids = Tensor::empty({U}, DType::I32, dev), starts = Tensor::empty({U}, DType::I32, dev);
  run_starts_kernel<<<blocks_for(M), kThreads, 0, stream_>>>(sorted.data<int32_t>(), run.data<int32_t>(),
                                                             uids.data<int32_t>(), starts.data<int32_t>(), M);
  CUDA_LAUNCHED("coalesce run starts");
  Tensor summed = Tensor::empty({U, d}, rows.dtype(), dev);
  dispatch(rows.dtype(), "coalesce_rows", [&](auto tag) {
    using T = decltype(tag);
    run_sums_kernel<<<blocks_for(U * d), kThreads, 0, stream_>>>(rows.data<T>(), perm.data<int32_t>(),
                                                                 starts.data<int32_t>(), summed.data<T>(), U, M, d);
  });
  CUDA_LAUNCHED("coalesce run sums");
  return {uids, summed};
}

}  // namespace sa
