// Shared by the CUDA kernels: checked calls that say which call failed and where, launch
// geometry, dtype dispatch and block reductions. Included only by engine/cuda/*.cu.
#pragma once
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <chrono>
#include <string>

#include "engine/backend.h"
#include "engine/core/device_counters.h"
#include "engine/cuda/host_meeting.h"

namespace sa {
[[noreturn]] void fail_message(const std::string& message);
}

#define CUDA_CHECK(call)                                                                                    \
  do {                                                                                                      \
    cudaError_t e_ = (call);                                                                                \
    if (e_ != cudaSuccess)                                                                                  \
      ::sa::fail_message(std::string("CUDA error: ") + cudaGetErrorString(e_) + " in " #call " at " __FILE__ \
                         ":" + std::to_string(__LINE__));                                                   \
  } while (0)

#define CUBLAS_CHECK(call)                                                                                  \
  do {                                                                                                      \
    cublasStatus_t s_ = (call);                                                                             \
    if (s_ != CUBLAS_STATUS_SUCCESS)                                                                        \
      ::sa::fail_message(std::string("cuBLAS error: ") + cublasGetStatusString(s_) + " in " #call          \
                         " at " __FILE__ ":" + std::to_string(__LINE__));                                   \
  } while (0)

// A call that blocks the host until the device gets there: checked, and its time counted as the
// host waiting (DeviceCounters::wait_ns). A step being recorded pauses for it.
#define CUDA_WAIT(call)                                                                                    \
  do {                                                                                                     \
    const ::sa::cuda::HostMeeting meeting_;                                                                \
    const auto t0_ = std::chrono::steady_clock::now();                                                     \
    CUDA_CHECK(call);                                                                                      \
    ::sa::counters::waited_ns(                                                                             \
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0_).count()); \
  } while (0)

// Checks the last kernel launch; names the kernel.
// After each kernel launch: the launch error, and one more kernel in device_counters().
#define CUDA_LAUNCHED(name)         \
  do {                              \
    CUDA_CHECK(cudaGetLastError()); \
    ::sa::counters::kernel();       \
  } while (0)

namespace sa::cudak {

constexpr int kThreads = 256;

inline unsigned blocks_for(int64_t n, int threads = kThreads) {
  int64_t b = (n + threads - 1) / threads;
  return static_cast<unsigned>(b < 1 ? 1 : (b > 65535 * 8 ? 65535 * 8 : b));
}

// Grid-stride loop over [0, n).
#define CUDA_LOOP(i, n) \
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < (n); i += (int64_t)blockDim.x * gridDim.x)

template <typename F>
void dispatch(DType t, const char* op, F&& f) {
  switch (t) {
    case DType::F32: f(float{}); break;
    case DType::F64: f(double{}); break;
    default: fail_message(std::string(op) + ": dtype not supported on CUDA (f32 or f64 expected)");
  }
}

template <typename T>
__device__ __forceinline__ T warp_sum(T v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

template <typename T>
__device__ __forceinline__ T warp_max(T v) {
  for (int o = 16; o > 0; o >>= 1) {
    T w = __shfl_xor_sync(0xffffffffu, v, o);
    v = w > v ? w : v;
  }
  return v;
}

// Sum (or max) over the block; every thread gets the result. blockDim.x a multiple of 32, <= 1024.
template <typename T, bool kMax>
__device__ T block_reduce(T v) {
  __shared__ T shared[32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
  v = kMax ? warp_max(v) : warp_sum(v);
  __syncthreads();  // shared[] may still be read by a previous call
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  T init = kMax ? -INFINITY : T(0);
  v = lane < nwarps ? shared[lane] : init;
  v = kMax ? warp_max(v) : warp_sum(v);
  return v;
}

// out[0] = the sum of pv[0..parts) by one block, in an order fixed by the block size:
// the second pass of a two-pass reduction, the same result on every call.
template <typename T>
__global__ void sum_partials_kernel(const T* pv, int64_t parts, T* out) {
  T s = 0;
  for (int64_t k = threadIdx.x; k < parts; k += blockDim.x) s += pv[k];
  const T total = block_reduce<T, false>(s);
  if (threadIdx.x == 0) out[0] = total;
}

}  // namespace sa::cudak
