// The CUDA backend: cuBLAS GEMMs and hand-written kernels, on one device: its own stream, and
// side streams (lanes) for independent work.
// Included only by engine/cuda/*.cu.
#pragma once
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "engine/cuda/cuda_common.cuh"
#include "engine/cuda/graph_signature.h"
#include "engine/upload_paths.h"

namespace sa {

class CudaCapture;

namespace cuda {
void* replay_offset_shift_address();  // the dropout kernels' offset shift (cuda_elementwise.cu)
}  // namespace cuda

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(int device);
  Device device() const override { return Device::cuda(device_); }
  CachingAllocator& allocator() override { return alloc_; }
  void synchronize() override;
  void set_tf32(bool on) override;
  void fork_lanes(int n) override;
  void use_lane(int i) override;
  void join_lanes() override;
  bool run_as_graph(uint64_t key, const std::function<void()>& body) override;
  void open_step(uint64_t key) override;
  void close_step(bool completed) override;
  // The calling thread's recorded step (cuda_graphs.cu), for HostMeeting: the piece recorded so
  // far ends and is started; then recording goes on.
  void end_piece();
  void resume_piece();
  // The stream and cuBLAS handle this thread's work goes to: its lane's between fork_lanes and
  // join_lanes, else the backend's own.
  cudaStream_t stream() const { return in_lane() ? lanes_[static_cast<size_t>(lane_)].stream : stream_; }
  cublasHandle_t blas() const { return in_lane() ? lanes_[static_cast<size_t>(lane_)].blas : blas_; }
  // Host -> device without waiting: `bytes` from src are staged in pinned memory and copied on
  // this backend's stream, in order with the kernels (with SA_COPY_STREAM=1: on a copy stream,
  // beside them, then into place in order). Returns false (nothing done) when the upload is
  // larger than a staging slot; the caller then copies synchronously.
  bool upload_async(void* dst, const void* src, size_t bytes);

  // A step replay's capture (cuda_capture.cu): the step's work on this backend's stream becomes one
  // graph. While one is open, uploads go to its pinned slots, a host read stops the run, and the
  // work a replay cannot repeat (a step's own random key or constants) is noted against it.
  std::unique_ptr<DeviceCapture> begin_capture(std::string* why) override;
  bool capturing() const { return capture_ != nullptr; }
  void capture_upload(void* dst, const void* src, size_t bytes);
  [[noreturn]] void capture_read();
  void capture_refuse(const char* why);
  void capture_seed(uint64_t seed);
  // A pool of its own on this device that never gives a block back (a capture's).
  std::shared_ptr<CachingAllocator> new_pool();

  SA_BACKEND_OVERRIDES
 private:
  friend class CudaCapture;
  CudaCapture* capture_ = nullptr;
  CachingAllocator* lanes_pool_ = nullptr;  // the capture's pool, holding frees while lanes are forked
  bool recording_step() const;              // this thread records a step (SA_CUDA_GRAPHS=step)
  CachingAllocator* capture_pool();
  int device_;
  CachingAllocator alloc_;
  // The backend's own stream: a blocking one, so work on the legacy default stream (cudaMemcpy,
  // libraries that default to it) still orders with it; its own, so it can be recorded as a graph.
  cudaStream_t stream_ = nullptr;
  cublasHandle_t blas_ = nullptr;
  // Every cuBLAS handle gets a workspace of its own: without one, cuBLAS allocates a fresh one
  // inside each recorded graph, and a graph holding allocations cannot be updated in place.
  static constexpr size_t kBlasWorkspaceBytes = size_t{32} << 20;
  void give_workspace(cublasHandle_t h);
  // The graphs of run_as_graph, one per key and stream, each updated with every new recording.
  // A key's first run is launched (a shape seen once is not worth a graph: made, it would cost
  // more than its launches); at most kGraphs are kept, the least recently used going first.
  struct Graph {
    cudaGraphExec_t exec = nullptr;  // none until the key's second run
    uint64_t used = 0;               // when last run (graph_clock_)
    cuda::GraphSig sig;              // the nodes `exec` was made from: updated in place only with the same
  };
  static constexpr size_t kGraphs = 256;  // a step's pieces and the LSTM's chains
  std::map<std::pair<uint64_t, cudaStream_t>, Graph> graphs_;
  uint64_t graph_clock_ = 0;
  std::mutex graphs_mu_;
  std::atomic<bool> graphs_failed_{false};  // a recording failed once: launch by launch from then on
  void graphs_off(const std::string& why);
  // Under graphs_mu_: the slot kept for (key, s), made if new (`fresh`), the least recently used
  // beyond kGraphs dropped.
  Graph& graph_slot(uint64_t key, cudaStream_t s, bool* fresh);
  // Updates the graph kept for (key, s) with the recording `g` when `g` holds the same nodes as
  // the recording it was made from (cuda::updatable_in_place), else makes it anew, and starts it
  // on `s`; takes `g`. False (with why) when it could not: nothing was started, and the slot is dropped.
  bool start_recording(uint64_t key, cudaStream_t s, cudaGraph_t g, std::string* why);
  // Recorded steps (open_step): the kinds whose first step was launched, under graphs_mu_.
  std::set<uint64_t> steps_seen_;
  std::atomic<bool> steps_failed_{false};  // a step could not be recorded: steps launched from then on
  void steps_off(const std::string& why);
 public:
  // Called when a thread starts using this backend (cuda::backend). Graphs are recorded only while
  // one thread has: another thread's launches on the shared stream would land in the recording.
  void note_thread();
 private:
  std::mutex threads_mu_;
  std::vector<std::thread::id> threads_;
  std::atomic<int> n_threads_{0};
  std::atomic<bool> threads_said_{false};  // the message that several threads keep graphs off, once
  bool tf32_ = false;
  // Side streams (blocking ones: the legacy stream's copies still wait for them), each with its
  // own cuBLAS handle and an event for the join; made on first use, kept.
  struct Lane {
    cudaStream_t stream = nullptr;
    cublasHandle_t blas = nullptr;
    cudaEvent_t done = nullptr;
  };
  std::vector<Lane> lanes_;
  cudaEvent_t forked_ = nullptr;
  int forked_lanes_ = 0;                // lanes in use since fork_lanes (0: none)
  static thread_local int lane_;                         // the calling thread's lane, -1 outside
  static thread_local const CudaBackend* lane_owner_;    // and the backend it is a lane of
  bool in_lane() const { return lane_owner_ == this && lane_ >= 0 && lane_ < forked_lanes_; }
  // The upload staging ring (upload_async): kSlots pinned slots, each reused only after the copy
  // that last read it has run (its event).
  static constexpr size_t kSlots = 16, kSlotBytes = size_t{4} << 20;
  char* pinned_ = nullptr;
  std::atomic<bool> staging_off_{false};  // SA_SYNC_UPLOADS=1, or no pinned memory
  cudaEvent_t slot_done_[kSlots] = {};
  size_t next_slot_ = 0;
  std::mutex upload_mu_;
  // SA_COPY_STREAM=1: the pinned slot goes to a device slot of its own on copy_stream_ while the
  // kernels queued before it run, and the stream copies the device slot into place in its turn.
  // Not straight into place: the destination may be a block that host code has freed but queued
  // kernels still read. A device slot is reused after its copy into place (slot_done_), which the
  // host waits for anyway before refilling the pinned slot.
  bool copy_stream_ready();  // under upload_mu_: made on first use; false when it cannot be
  cudaStream_t copy_stream_ = nullptr;
  char* device_slots_ = nullptr;
  cudaEvent_t slot_arrived_[kSlots] = {};
  bool copy_stream_failed_ = false;
 public:
  cuda::UploadPaths upload_paths() {
    std::lock_guard<std::mutex> lock(upload_mu_);
    return paths_;
  }
 private:
  cuda::UploadPaths paths_;  // under upload_mu_
};

}  // namespace sa
