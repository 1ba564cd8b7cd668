// The CUDA backend: cuBLAS GEMMs and hand-written kernels, on one device and one stream.
// Included only by engine/cuda/*.cu.
#pragma once
#include <atomic>
#include <mutex>

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
  // Host -> device without waiting: `bytes` from src are staged in pinned memory and copied on
  // this backend's stream, in order with the kernels. Returns false (nothing done) when the
  // upload is larger than a staging slot; the caller then copies synchronously.
  bool upload_async(void* dst, const void* src, size_t bytes);

  SA_BACKEND_OVERRIDES
 private:
  int device_;
  CachingAllocator alloc_;
  cudaStream_t stream_ = nullptr;  // the legacy default stream: ordered with cudaMemcpy
  cublasHandle_t blas_ = nullptr;
  // The upload staging ring (upload_async): kSlots pinned slots, each reused only after the copy
  // that last read it has run (its event).
  static constexpr size_t kSlots = 16, kSlotBytes = size_t{4} << 20;
  char* pinned_ = nullptr;
  std::atomic<bool> staging_off_{false};  // SA_SYNC_UPLOADS=1, or no pinned memory
  cudaEvent_t slot_done_[kSlots] = {};
  size_t next_slot_ = 0;
  std::mutex upload_mu_;
};

}  // namespace sa
