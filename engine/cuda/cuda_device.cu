// CUDA devices: discovery, the per-device backend and caching allocator, and copies.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/cuda/cuda_backend.cuh"
#ifdef SA_CUDNN
#include "engine/ops/cudnn_lstm.h"
#endif

namespace sa {

// The allocator may run for one device while the thread works on another: it puts the thread's
// device back, so backend()'s record of the bound device stays true.
class OnDevice {
 public:
  explicit OnDevice(int device) {
    cudaGetDevice(&prev_);
    if (prev_ != device) cudaSetDevice(device);
  }
  ~OnDevice() { cudaSetDevice(prev_); }

 private:
  int prev_ = 0;
};

static void* device_raw_alloc(size_t bytes, int device) {
  OnDevice on(device);
  void* p = nullptr;
  if (cudaMalloc(&p, bytes) != cudaSuccess) {
    cudaGetLastError();  // clear the error: the caller frees its cache and retries once
    return nullptr;
  }
  return p;
}

static void device_raw_free(void* p, int device) {
  const cuda::HostMeeting meeting;  // cudaFree waits for the device: no recorded step holds it
  OnDevice on(device);
  cudaFree(p);
}

std::shared_ptr<CachingAllocator> CudaBackend::new_pool() {
  return CachingAllocator::kept_pool(device_raw_alloc, device_raw_free, device_);
}

CudaBackend::CudaBackend(int device) : device_(device), alloc_(device_raw_alloc, device_raw_free, device) {
  CUDA_CHECK(cudaSetDevice(device));
  CUDA_CHECK(cudaStreamCreate(&stream_));
  CUBLAS_CHECK(cublasCreate(&blas_));
  CUBLAS_CHECK(cublasSetStream(blas_, stream_));
  give_workspace(blas_);
}

// After cublasSetStream, which resets a handle's workspace to cuBLAS's own pool. Kept for the
// process's life, like the handles.
void CudaBackend::give_workspace(cublasHandle_t h) {
  void* w = nullptr;
  CUDA_CHECK(cudaMalloc(&w, kBlasWorkspaceBytes));
  CUBLAS_CHECK(cublasSetWorkspace(h, w, kBlasWorkspaceBytes));
}

void CudaBackend::synchronize() {
  if (capturing()) return;  // a step being captured runs nothing yet: nothing to wait for
  CUDA_WAIT(cudaStreamSynchronize(stream_));
}

// cudaMemcpy from pageable memory first waits for every kernel queued before it: the batch's
// uploads (16 a step for ELMo) each drained the GPU's queue, and the host could not run ahead.
// Staged in pinned memory and copied with cudaMemcpyAsync, an upload returns at once.
// SA_SYNC_UPLOADS=1 turns it off (every upload a plain cudaMemcpy), and so does a machine that
// refuses the pinned memory: both say so once. The copy itself still runs in its turn among the
// kernels; with SA_COPY_STREAM=1 it runs beside the kernels queued before it (copy_stream_ready).
bool CudaBackend::upload_async(void* dst, const void* src, size_t bytes) {
  if (bytes > kSlotBytes || staging_off_) return false;
  // Not into a recording: the slot's event would become the recording's, and the next wait on it
  // fail. The plain copy then ends the recording cleanly (run_as_graph launches the chain instead).
  cudaStreamCaptureStatus recording = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream(), &recording) != cudaSuccess || recording != cudaStreamCaptureStatusNone) {
    cudaGetLastError();
    return false;
  }
  std::lock_guard<std::mutex> lock(upload_mu_);
  if (!pinned_) {  // set last: a failed setup is never half used
    const char* off = std::getenv("SA_SYNC_UPLOADS");
    char* p = nullptr;
    if (off && std::string(off) == "1") {
      std::fprintf(stderr, "sensealign: SA_SYNC_UPLOADS=1: uploads wait for the GPU (no pinned staging)\n");
      staging_off_ = true;
      return false;
    }
    if (cudaHostAlloc(reinterpret_cast<void**>(&p), kSlots * kSlotBytes, cudaHostAllocDefault) != cudaSuccess) {
      cudaGetLastError();
      std::fprintf(stderr, "sensealign: no pinned memory for upload staging; uploads wait for the GPU\n");
      staging_off_ = true;
      return false;
    }
    for (cudaEvent_t& e : slot_done_)
      if (!e) CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    pinned_ = p;
  }
  const size_t s = next_slot_;
  next_slot_ = (next_slot_ + 1) % kSlots;
  CUDA_WAIT(cudaEventSynchronize(slot_done_[s]));  // the copy that last read this slot has run
  char* slot = pinned_ + s * kSlotBytes;
  std::memcpy(slot, src, bytes);
  const char* side = std::getenv("SA_COPY_STREAM");  // read at each upload: tests compare both
  try {
    if (side && std::string(side) == "1" && copy_stream_ready()) {
      char* arrived = device_slots_ + s * kSlotBytes;
      CUDA_CHECK(cudaMemcpyAsync(arrived, slot, bytes, cudaMemcpyHostToDevice, copy_stream_));
      CUDA_CHECK(cudaEventRecord(slot_arrived_[s], copy_stream_));
      CUDA_CHECK(cudaStreamWaitEvent(stream(), slot_arrived_[s], 0));
      CUDA_CHECK(cudaMemcpyAsync(dst, arrived, bytes, cudaMemcpyDeviceToDevice, stream()));
      ++paths_.on_copy_stream;
    } else {
      CUDA_CHECK(cudaMemcpyAsync(dst, slot, bytes, cudaMemcpyHostToDevice, stream()));
    }
    CUDA_CHECK(cudaEventRecord(slot_done_[s], stream()));
  } catch (...) {
    staging_off_ = true;  // slot s may still be read by a queued copy that no event guards
    throw;
  }
  ++paths_.staged;
  return true;
}

// A blocking stream like the backend's own (the legacy stream's synchronous copies still wait for
// it), and kSlots device slots (64 MiB). A device that refuses the memory keeps the copies on the
// backend's stream, and says so once.
bool CudaBackend::copy_stream_ready() {
  if (copy_stream_) return true;
  if (copy_stream_failed_) return false;
  OnDevice on(device_);  // the thread may be bound to another device
  void* slots = nullptr;
  cudaStream_t side = nullptr;
  bool ok = cudaMalloc(&slots, kSlots * kSlotBytes) == cudaSuccess && cudaStreamCreate(&side) == cudaSuccess;
  for (cudaEvent_t& e : slot_arrived_)
    ok = ok && (e || cudaEventCreateWithFlags(&e, cudaEventDisableTiming) == cudaSuccess);
  if (!ok) {  // tried once: the copies stay on the backend's stream
    cudaGetLastError();
    if (side) cudaStreamDestroy(side);
    if (slots) cudaFree(slots);
    std::fprintf(stderr, "sensealign: SA_COPY_STREAM=1, but no copy stream or device memory for its staging "
                         "slots; uploads stay on the compute stream\n");
    copy_stream_failed_ = true;
    return false;
  }
  device_slots_ = static_cast<char*>(slots);
  copy_stream_ = side;  // set last: a failed setup is never half used
  return true;
}

void CudaBackend::note_thread() {
  std::lock_guard<std::mutex> lock(threads_mu_);
  const std::thread::id me = std::this_thread::get_id();
  for (const std::thread::id& t : threads_)
    if (t == me) return;
  threads_.push_back(me);
  n_threads_ = static_cast<int>(threads_.size());
}

void CudaBackend::set_tf32(bool on) {
  tf32_ = on;
  const cublasMath_t mode = on ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH;
  CUBLAS_CHECK(cublasSetMathMode(blas_, mode));
  for (Lane& l : lanes_) CUBLAS_CHECK(cublasSetMathMode(l.blas, mode));
}

thread_local int CudaBackend::lane_ = -1;
thread_local const CudaBackend* CudaBackend::lane_owner_ = nullptr;

// Each lane waits for what the backend's stream has queued (forked_), runs its own work, and the
// join makes the backend's stream wait for every lane's last event. Frees are held meanwhile: a
// block one lane's host code frees may still be read by that lane's queued kernels when another
// lane's allocation would take it. The lanes, like the backend's stream, are blocking streams: a
// synchronous copy or host read (on the legacy stream) in between still waits for every lane (a
// barrier, but never a race). Non-blocking lanes would need every such copy on the lanes' streams
// first.
void CudaBackend::fork_lanes(int n) {
  if (forked_lanes_ > 0) fail_message("fork_lanes: lanes already forked (they do not nest)");
  if (!forked_) CUDA_CHECK(cudaEventCreateWithFlags(&forked_, cudaEventDisableTiming));
  if (static_cast<int>(lanes_.size()) < n) {
    const cuda::HostMeeting setup;  // new lanes' handles and workspaces: no recorded step holds them
    while (static_cast<int>(lanes_.size()) < n) {
      Lane l;
      CUDA_CHECK(cudaStreamCreate(&l.stream));
      CUBLAS_CHECK(cublasCreate(&l.blas));
      CUBLAS_CHECK(cublasSetStream(l.blas, l.stream));
      give_workspace(l.blas);
      CUBLAS_CHECK(cublasSetMathMode(l.blas, tf32_ ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
      CUDA_CHECK(cudaEventCreateWithFlags(&l.done, cudaEventDisableTiming));
      lanes_.push_back(l);
    }
  }
  CUDA_CHECK(cudaEventRecord(forked_, stream_));
  for (int i = 0; i < n; ++i) CUDA_CHECK(cudaStreamWaitEvent(lanes_[static_cast<size_t>(i)].stream, forked_, 0));
  alloc_.hold_frees();
  if (capture_) (lanes_pool_ = capture_pool())->hold_frees();
  forked_lanes_ = n;
  counters::lanes(n);
}

void CudaBackend::use_lane(int i) {
  if (i < 0 || i >= forked_lanes_)
    fail_message("use_lane: lane " + std::to_string(i) + " of " + std::to_string(forked_lanes_) + " forked");
  lane_ = i, lane_owner_ = this;
}

void CudaBackend::join_lanes() {
  if (forked_lanes_ == 0) return;
  lane_ = -1, lane_owner_ = nullptr;
  struct Reset {  // also when a call below fails: no lane stays forked, no free stays held
    CudaBackend& be;
    ~Reset() {
      be.forked_lanes_ = 0;
      be.alloc_.release_held();
      if (be.lanes_pool_) be.lanes_pool_->release_held();
      be.lanes_pool_ = nullptr;
    }
  } reset{*this};
  for (int i = 0; i < forked_lanes_; ++i) {
    const Lane& l = lanes_[static_cast<size_t>(i)];
    CUDA_CHECK(cudaEventRecord(l.done, l.stream));
    CUDA_CHECK(cudaStreamWaitEvent(stream_, l.done, 0));
  }
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

// Every device's backend is made once, on first use; after that an op's call takes no lock and
// switches the thread's device only when it changes (a thread that works on one GPU never does).
Backend& backend(int device) {
  struct Slot {
    std::once_flag made;
    std::unique_ptr<CudaBackend> backend;
  };
  static std::vector<Slot> slots(static_cast<size_t>(device_count()));
  thread_local int bound = -1;
  if (device < 0 || device >= static_cast<int>(slots.size()))
    fail_message("cuda:" + std::to_string(device) + " requested but " + std::to_string(slots.size()) +
                 " GPU(s) are visible");
  Slot& s = slots[static_cast<size_t>(device)];
  std::call_once(s.made, [&] { s.backend = std::make_unique<CudaBackend>(device); });
  if (bound != device) {
    CUDA_CHECK(cudaSetDevice(device));
    bound = device;
    s.backend->note_thread();
  }
  return *s.backend;
}

void* stream_of(int device) { return static_cast<CudaBackend&>(backend(device)).stream(); }

UploadPaths upload_paths(int device) { return static_cast<CudaBackend&>(backend(device)).upload_paths(); }

void copy(void* dst, Device dst_dev, const void* src, Device src_dev, size_t bytes) {
  const bool upload = dst_dev.is_cuda() && !src_dev.is_cuda();
  if (bytes == 0 && !upload) return;  // an empty upload may be a captured step's input (below)
  if (src_dev.is_cuda() && dst_dev == src_dev) {
    // Within a device: on the calling thread's stream (its lane's, between fork and join), so it
    // neither waits for other lanes' work nor makes them wait, as a copy on the legacy stream would.
    CudaBackend& be = static_cast<CudaBackend&>(backend_uncounted(src_dev));
    CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, be.stream()));
    return;
  }
  // The copy runs on the current device's (legacy) stream: the source's, bound here, so it follows
  // the work queued on that device's stream.
  CudaBackend& be = static_cast<CudaBackend&>(backend_uncounted(src_dev.is_cuda() ? src_dev : dst_dev));
  // A step captured for replay: an upload goes to the capture's pinned slots; a read cannot be held.
  if (be.capturing()) {
    if (!dst_dev.is_cuda() || src_dev.is_cuda()) be.capture_read();
    be.capture_upload(dst, src, bytes);
    return;
  }
  if (bytes == 0) return;
  const HostMeeting meeting;  // host memory (or another device's): a recorded step pauses for it
  if (dst_dev.is_cuda() && !src_dev.is_cuda() && be.upload_async(dst, src, bytes)) return;
  CUDA_WAIT(cudaMemcpy(dst, src, bytes, cudaMemcpyDefault));
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
