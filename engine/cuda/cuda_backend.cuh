// The CUDA backend: cuBLAS GEMMs and hand-written kernels, on one device and one stream.
// Included only by engine/cuda/*.cu.
#pragma once
#include "engine/cuda/cuda_common.cuh"

namespace sa {

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(int device);
  Device device() const override { return Device::cuda(device_); }
  CachingAllocator& allocator() override { return alloc_; }
  void synchronize() override;
  void set_tf32(bool on) override;
  cudaStream_t stream() const { return stream_; }
  cublasHandle_t blas() const { return blas_; }

  SA_BACKEND_OVERRIDES
 private:
  int device_;
  CachingAllocator alloc_;
  cudaStream_t stream_ = nullptr;  // the legacy default stream: ordered with cudaMemcpy
  cublasHandle_t blas_ = nullptr;
};

}  // namespace sa
