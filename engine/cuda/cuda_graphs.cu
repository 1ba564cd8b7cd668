// Chains of launches recorded as one CUDA graph (Backend::run_as_graph). The LSTM's step loop is
// four launches a step, each small and dependent on the last: started one by one, the GPU idles
// between them and the host pays for each. Recorded, the chain is one launch.
//
// Each run records the chain anew (the host code runs as before, but queues nothing) and updates
// the graph made for the key in place with the new pointers and values, so a run never replays
// stale arguments; only a key's second run, or a chain whose kernels changed, instantiates.
#include <cstdio>
#include <string>

#include "engine/core/recording_scope.h"
#include "engine/cuda/cuda_backend.cuh"

namespace sa {

namespace {

// Ends the recording on `s` whatever happened, and hands back what it holds (null if nothing).
// Clears any error the recording left, so the rerun's first launch does not report it.
cudaGraph_t end_recording(cudaStream_t s) {
  cudaGraph_t g = nullptr;
  if (cudaStreamEndCapture(s, &g) != cudaSuccess && g) {
    cudaGraphDestroy(g);
    g = nullptr;
  }
  cudaGetLastError();
  return g;
}

bool recording_invalidated(cudaStream_t s) {
  cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
  const cudaError_t e = cudaStreamIsCapturing(s, &st);
  cudaGetLastError();
  return e != cudaSuccess || st == cudaStreamCaptureStatusInvalidated;
}

}  // namespace

void CudaBackend::graphs_off(const std::string& why) {
  if (!graphs_failed_.exchange(true))
    std::fprintf(stderr, "sensealign: SA_CUDA_GRAPHS=1, but a chain could not be recorded as a graph (%s); "
                 "launching kernel by kernel from now on\n", why.c_str());
}

bool CudaBackend::run_as_graph(uint64_t key, const std::function<void()>& body) {
  if (!cuda_graphs_enabled() || graphs_failed_) {
    body();
    return false;
  }
  if (n_threads_ > 1) {  // another thread's launches on the shared stream would land in the recording
    if (!threads_said_.exchange(true))
      std::fprintf(stderr, "sensealign: SA_CUDA_GRAPHS=1, but %d host threads use cuda:%d; launching kernel by "
                   "kernel\n", n_threads_.load(), device_);
    body();
    return false;
  }
  const cudaStream_t s = stream();
  bool first = false;
  {
    std::lock_guard<std::mutex> lock(graphs_mu_);
    auto [it, fresh] = graphs_.try_emplace({key, s});
    it->second.used = ++graph_clock_;
    first = fresh;
    if (graphs_.size() > kGraphs) {  // the least recently used goes
      auto oldest = graphs_.begin();
      for (auto j = graphs_.begin(); j != graphs_.end(); ++j)
        if (j->second.used < oldest->second.used) oldest = j;
      if (oldest->second.exec) cudaGraphExecDestroy(oldest->second.exec);  // one still running is freed when it ends
      cudaGetLastError();
      graphs_.erase(oldest);
    }
  }
  if (first) {  // a key's first run is launched: a shape seen once is not worth making a graph
    body();
    return false;
  }
  // A failed recording queued nothing: its counts are taken back and the chain is launched.
  const DeviceCounters at_start = thread_device_counters();
  auto launch_instead = [&] {
    counters::take_back(thread_device_counters() - at_start);
    body();
    return false;
  };
  if (cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed) != cudaSuccess) {
    cudaGetLastError();
    graphs_off("the driver refused to record");
    body();
    return false;
  }
  try {
    RecordingScope recording;  // out of memory fails at once; the rerun gives the cache back
    body();
  } catch (...) {
    // A primitive the recording forbids (a read, a synchronous copy) invalidates it: graphs go
    // off. Any other error (out of memory, a failed check) is the chain's own, and its rerun
    // raises it again, with its own message; one the rerun does not raise came from recording,
    // and would come back at every run: graphs go off then too.
    const bool invalidated = recording_invalidated(s);
    if (cudaGraph_t g = end_recording(s)) cudaGraphDestroy(g);
    if (invalidated) graphs_off("a primitive of the chain cannot be recorded");
    launch_instead();
    graphs_off("the chain failed only while being recorded");  // says nothing if already off
    return false;
  }
  cudaGraph_t g = end_recording(s);
  if (!g) {
    graphs_off("the recording was invalidated");
    return launch_instead();
  }
  std::unique_lock<std::mutex> lock(graphs_mu_);
  // Made, updated and started under the lock: no other update between the update and the launch.
  auto fail = [&](const char* what) {
    const std::string why = std::string(what) + ": " + cudaGetErrorString(cudaGetLastError());
    const auto it = graphs_.find({key, s});
    if (it != graphs_.end()) {
      if (it->second.exec) cudaGraphExecDestroy(it->second.exec);
      graphs_.erase(it);
    }
    cudaGraphDestroy(g);
    cudaGetLastError();
    lock.unlock();
    graphs_off(why);
    return launch_instead();
  };
  const auto it = graphs_.find({key, s});
  if (it == graphs_.end()) return fail("the chain's graph was dropped while recording");
  Graph& slot = it->second;
  if (slot.exec) {
    cudaGraphExecUpdateResultInfo info{};
    if (cudaGraphExecUpdate(slot.exec, g, &info) != cudaSuccess) {  // other kernels: made anew below
      cudaGetLastError();
      cudaGraphExecDestroy(slot.exec);  // one still running is freed when it ends
      cudaGetLastError();
      slot.exec = nullptr;
    }
  }
  if (!slot.exec) {  // into a local: a failed instantiation leaves the slot empty
    cudaGraphExec_t made = nullptr;
    if (cudaGraphInstantiate(&made, g, 0) != cudaSuccess) return fail("instantiating");
    slot.exec = made;
  }
  if (cudaGraphLaunch(slot.exec, s) != cudaSuccess) return fail("launching");  // nothing was queued
  cudaGraphDestroy(g);
  cudaGetLastError();
  return true;
}

}  // namespace sa
