// Chains of launches recorded as one CUDA graph (Backend::run_as_graph). The LSTM's step loop is
// four launches a step, each small and dependent on the last: started one by one, the GPU idles
// between them and the host pays for each. Recorded, the chain is one launch.
//
// Each run records the chain anew (the host code runs as before, but queues nothing) and updates
// the graph made for the key in place with the new pointers and values, so a run never replays
// stale arguments; only the first run of a key, or a chain whose kernels changed, instantiates.
#include <cstdio>
#include <string>

#include "engine/cuda/cuda_backend.cuh"

namespace sa {

namespace {

// Ends the recording on `s` whatever happened, and hands back what it holds (null if nothing).
cudaGraph_t end_recording(cudaStream_t s) {
  cudaGraph_t g = nullptr;
  if (cudaStreamEndCapture(s, &g) != cudaSuccess) {
    cudaGetLastError();  // an invalidated recording: not an error of the device, clear it
    if (g) cudaGraphDestroy(g);
    return nullptr;
  }
  return g;
}

}  // namespace

bool CudaBackend::run_as_graph(uint64_t key, const std::function<void()>& body) {
  if (!cuda_graphs_enabled() || graphs_failed_) {
    body();
    return false;
  }
  const cudaStream_t s = stream();
  // A failed recording queued nothing: the chain runs again launch by launch, and so does every
  // later one (a recording that fails once would fail each time, and cost a run each time).
  auto launch_by_launch = [&](const std::string& why) {
    if (!graphs_failed_.exchange(true))
      std::fprintf(stderr, "sensealign: SA_CUDA_GRAPHS=1, but a chain could not be recorded as a graph (%s); "
                   "launching kernel by kernel\n", why.c_str());
    body();
    return false;
  };
  // Relaxed: the allocator may still call cudaMalloc for a block the chain asks for; each run
  // records its own pointers, so nothing depends on an allocation being replayed.
  CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
  try {
    body();
  } catch (const std::exception& e) {
    if (cudaGraph_t g = end_recording(s)) cudaGraphDestroy(g);
    return launch_by_launch(e.what());
  }
  cudaGraph_t g = end_recording(s);
  if (!g) return launch_by_launch("the recording was invalidated");
  cudaGraphExec_t exec = nullptr;
  {
    std::lock_guard<std::mutex> lock(graphs_mu_);
    cudaGraphExec_t& slot = graphs_[{key, s}];
    if (slot) {
      cudaGraphExecUpdateResultInfo info{};
      if (cudaGraphExecUpdate(slot, g, &info) != cudaSuccess) {  // other kernels: made anew below
        cudaGetLastError();
        cudaGraphExecDestroy(slot);
        slot = nullptr;
      }
    }
    if (!slot && cudaGraphInstantiate(&slot, g, 0) != cudaSuccess) {
      const std::string why = cudaGetErrorString(cudaGetLastError());
      slot = nullptr;
      cudaGraphDestroy(g);
      return launch_by_launch("instantiating: " + why);
    }
    exec = slot;
  }
  cudaGraphDestroy(g);
  CUDA_CHECK(cudaGraphLaunch(exec, s));
  return true;
}

}  // namespace sa
