// A training step captured on the backend's stream as one CUDA graph and replayed (the GPU half of
// engine/step_replay.h; engine/device_capture.h says what each call does).
//
// While captured, the step's tensors come from a pool of its own that never gives a block back,
// and blocks made before the capture and freed during it are set aside, not handed out again: the
// graph names both for as long as it replays. Each upload goes through a pinned slot of its own,
// copied at its place in the graph, so that a replay's inputs land where the step made them (the
// pool may have given an input's block to a temporary earlier in the step). The graph's first node
// sets the dropout kernels' offset shift from a pinned slot of its own, its last puts it back to 0.
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "engine/cuda/cuda_backend.cuh"

namespace sa {

class CudaCapture final : public DeviceCapture {
 public:
  explicit CudaCapture(CudaBackend& be) : be_(be) {}
  ~CudaCapture() override {
    abandon();
    if (done_) cudaEventSynchronize(done_);  // the last replay has read its slots and memory
    if (exec_) cudaGraphExecDestroy(exec_);
    if (done_) cudaEventDestroy(done_);
    for (const HostBytes& s : slots_)
      if (s.data) cudaFreeHost(const_cast<void*>(s.data));
    if (shift_) cudaFreeHost(shift_);
    cudaGetLastError();
    be_.allocator().return_blocks(aside_);
  }

  // Opens the capture; false, with the reason, when the driver refuses (nothing is captured then).
  bool open(std::string* why) {
    auto refused = [&](const char* what, cudaError_t e) {
      cudaGetLastError();
      *why = std::string(what) + ": " + cudaGetErrorString(e);
      return false;
    };
    if (cudaError_t e = cudaEventCreateWithFlags(&done_, cudaEventDisableTiming); e != cudaSuccess)
      return refused("no event for the replays", e);
    if (cudaError_t e = cudaHostAlloc(reinterpret_cast<void**>(&shift_), sizeof(uint64_t), cudaHostAllocDefault);
        e != cudaSuccess)
      return refused("no pinned memory for the offset shift", e);
    *shift_ = 0;
    shift_on_device_ = cuda::replay_offset_shift_address();
    pool_ = be_.new_pool();
    // The launched steps' cached blocks go back first: the pool takes the step's memory anew.
    be_.allocator().release_cached();
    be_.allocator().set_aside_frees(true);
    if (cudaError_t e = cudaStreamBeginCapture(be_.stream_, cudaStreamCaptureModeRelaxed); e != cudaSuccess) {
      be_.allocator().set_aside_frees(false);
      return refused("the driver refused to capture", e);
    }
    capturing_ = true;
    be_.capture_ = this;
    CUDA_CHECK(cudaMemcpyAsync(shift_on_device_, shift_, sizeof(uint64_t), cudaMemcpyHostToDevice, be_.stream_));
    return true;
  }

  std::shared_ptr<CachingAllocator> pool() override { return pool_; }

  void upload(void* dst, const void* src, size_t bytes) override {
    if (bytes == 0) {  // an input all the same, as the CPU's model keeps it: nothing to copy
      slots_.push_back({nullptr, 0});
      return;
    }
    void* slot = nullptr;
    if (cudaError_t e = cudaHostAlloc(&slot, bytes, cudaHostAllocDefault); e != cudaSuccess) {
      cudaGetLastError();
      failed_ = std::string("no pinned memory for an input of ") + std::to_string(bytes) + " bytes";
      return;
    }
    std::memcpy(slot, src, bytes);
    slots_.push_back({slot, bytes});
    CUDA_CHECK(cudaMemcpyAsync(dst, slot, bytes, cudaMemcpyHostToDevice, be_.stream()));
  }

  // Work a replay cannot repeat: the graph still runs the captured step once.
  void refuse(const char* why) {
    if (why_not_.empty()) why_not_ = why;
  }
  void note_seed(uint64_t seed) { seeds_.push_back(seed); }
  std::string why_not() const override { return why_not_; }
  std::vector<uint64_t> dropout_seeds() const override { return seeds_; }

  void refuse_read() override {
    abandon();
    fail_message("SA_STEP_REPLAY=1: the step being captured for replay read a device value on the host, which a "
                 "graph cannot hold; the step's work is lost, so the run stops here (run without SA_STEP_REPLAY=1; "
                 "training resumes from its last checkpoint)");
  }

  bool end(std::string* why) override {
    if (!capturing_) {
      *why = "the capture was abandoned";
      return false;
    }
    cudaError_t e = cudaMemsetAsync(shift_on_device_, 0, sizeof(uint64_t), be_.stream_);
    cudaGraph_t g = nullptr;
    const cudaError_t ended = cudaStreamEndCapture(be_.stream_, &g);
    close();
    if (e == cudaSuccess) e = ended;
    if (e == cudaSuccess && failed_.empty()) e = cudaGraphInstantiate(&exec_, g, 0);
    if (e == cudaSuccess && failed_.empty()) e = cudaGraphGetNodes(g, nullptr, &nodes_);
    if (e == cudaSuccess && failed_.empty()) e = cudaGraphLaunch(exec_, be_.stream_);
    if (e == cudaSuccess && failed_.empty()) e = cudaEventRecord(done_, be_.stream_);
    if (g) cudaGraphDestroy(g);
    if (e != cudaSuccess || !failed_.empty()) {
      *why = failed_.empty() ? std::string("the captured step could not be started: ") + cudaGetErrorString(e) : failed_;
      cudaGetLastError();
      return false;
    }
    return true;
  }

  void abandon() override {
    if (!capturing_) return;
    cudaGraph_t g = nullptr;
    cudaStreamEndCapture(be_.stream_, &g);
    if (g) cudaGraphDestroy(g);
    cudaGetLastError();
    close();
  }

  HostBytes input(size_t i) const override { return slots_.at(i); }
  size_t inputs() const override { return slots_.size(); }

  void replay(const std::vector<HostBytes>& values, uint64_t offset_shift) override {
    CUDA_WAIT(cudaEventSynchronize(done_));  // the last replay's copies have read the slots
    for (size_t i = 0; i < values.size() && i < slots_.size(); ++i)
      if (values[i].bytes > 0) std::memcpy(const_cast<void*>(slots_[i].data), values[i].data, values[i].bytes);
    *shift_ = offset_shift;
    CUDA_CHECK(cudaGraphLaunch(exec_, be_.stream_));
    CUDA_CHECK(cudaEventRecord(done_, be_.stream_));
  }

  size_t nodes() const override { return nodes_; }

 private:
  // The capture is over (ended or abandoned): the backend's frees and uploads are its own again,
  // and what was set aside is this capture's until it goes.
  void close() {
    capturing_ = false;
    if (be_.capture_ == this) be_.capture_ = nullptr;
    be_.allocator().set_aside_frees(false);
    std::vector<CachingAllocator::Block> more = be_.allocator().take_set_aside();
    aside_.insert(aside_.end(), more.begin(), more.end());
  }

  CudaBackend& be_;
  std::shared_ptr<CachingAllocator> pool_;
  std::vector<HostBytes> slots_;  // pinned, one an input, in the order the step uploaded them
  std::vector<CachingAllocator::Block> aside_;
  uint64_t* shift_ = nullptr;     // pinned
  void* shift_on_device_ = nullptr;
  cudaEvent_t done_ = nullptr;    // recorded after each launch
  cudaGraphExec_t exec_ = nullptr;
  size_t nodes_ = 0;
  bool capturing_ = false;
  std::string failed_;  // an upload that could not be staged: the graph lacks it
  std::string why_not_;
  std::vector<uint64_t> seeds_;  // of the dropout masks drawn in the step
};

std::unique_ptr<DeviceCapture> CudaBackend::begin_capture(std::string* why) {
  if (capture_ || recording_step()) {
    *why = "the stream is being recorded already";
    return nullptr;
  }
  if (n_threads_ > 1) {  // another thread's launches on the shared stream would land in the graph
    *why = std::to_string(n_threads_.load()) + " host threads use cuda:" + std::to_string(device_);
    return nullptr;
  }
  auto c = std::make_unique<CudaCapture>(*this);
  if (!c->open(why)) return nullptr;
  return c;
}

void CudaBackend::capture_upload(void* dst, const void* src, size_t bytes) { capture_->upload(dst, src, bytes); }
void CudaBackend::capture_read() {
  capture_->refuse_read();
  fail_message("SA_STEP_REPLAY=1: a host read while capturing");  // not reached: refuse_read throws
}
CachingAllocator* CudaBackend::capture_pool() { return capture_ ? capture_->pool().get() : nullptr; }
void CudaBackend::capture_refuse(const char* why) {
  if (capture_) capture_->refuse(why);
}
void CudaBackend::capture_seed(uint64_t seed) {
  if (capture_) capture_->note_seed(seed);
}

}  // namespace sa
