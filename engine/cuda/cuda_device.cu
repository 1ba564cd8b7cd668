// CUDA devices: discovery, the per-device backend and caching allocator, and copies.
#include <cstdio>
#include <memory>
#include <mutex>
#include <vector>

#include "engine/cuda/cuda_backend.cuh"
#ifdef SA_CUDNN
#include "engine/ops/cudnn_lstm.h"
#endif

namespace sa {

static void* device_raw_alloc(size_t bytes, int device) {
  void* p = nullptr;
  CUDA_CHECK(cudaSetDevice(device));
  if (cudaMalloc(&p, bytes) != cudaSuccess) {
    cudaGetLastError();  // clear the error: the caller frees its cache and retries once
    return nullptr;
  }
  return p;
}

static void device_raw_free(void* p, int device) {
  cudaSetDevice(device);
  cudaFree(p);
}

CudaBackend::CudaBackend(int device) : device_(device), alloc_(device_raw_alloc, device_raw_free, device) {
  CUDA_CHECK(cudaSetDevice(device));
  CUBLAS_CHECK(cublasCreate(&blas_));
  CUBLAS_CHECK(cublasSetStream(blas_, stream_));
}

void CudaBackend::synchronize() { CUDA_CHECK(cudaStreamSynchronize(stream_)); }

void CudaBackend::set_tf32(bool on) {
  CUBLAS_CHECK(cublasSetMathMode(blas_, on ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
}

namespace cuda {

bool built() { return true; }

int device_count() {
  static int n = [] {
    int c = 0;
    if (cudaGetDeviceCount(&c) != cudaSuccess) {
      cudaGetLastError();
      return 0;
    }
    return c;
  }();
  return n;
}

Backend& backend(int device) {
  static std::mutex mu;
  static std::vector<std::unique_ptr<CudaBackend>> backends;
  int n = device_count();
  if (device < 0 || device >= n)
    fail_message("cuda:" + std::to_string(device) + " requested but " + std::to_string(n) + " GPU(s) are visible");
  std::lock_guard<std::mutex> lock(mu);
  if (backends.empty()) backends.resize(static_cast<size_t>(n));
  if (!backends[device]) backends[device] = std::make_unique<CudaBackend>(device);
  CUDA_CHECK(cudaSetDevice(device));
  return *backends[device];
}

void copy(void* dst, Device dst_dev, const void* src, Device src_dev, size_t bytes) {
  if (bytes == 0) return;
  CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDefault));
}

std::string describe_device(int device) {
  cudaDeviceProp p{};
  CUDA_CHECK(cudaGetDeviceProperties(&p, device));
  int rt = 0;
  cudaRuntimeGetVersion(&rt);
#ifdef SA_CUDNN
  const std::string cudnn = cudnn_lstm::version();
#else
  const std::string cudnn = "cuDNN not built";
#endif
  return std::string(p.name) + ", compute " + std::to_string(p.major) + "." + std::to_string(p.minor) + ", " +
         std::to_string(p.totalGlobalMem >> 30) + " GiB, CUDA runtime " + std::to_string(rt / 1000) + "." +
         std::to_string((rt % 1000) / 10) + ", " + cudnn;
}

}  // namespace cuda
}  // namespace sa
