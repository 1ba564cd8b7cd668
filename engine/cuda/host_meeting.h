// Where the host meets a GPU in the middle of a step recorded as CUDA graphs (StepGraphs in
// engine/backend.h; engine/cuda/cuda_graphs.cu). Plain C++: the cuDNN code includes it too.
#pragma once

namespace sa::cuda {

// While one lives, the step that the calling thread records as graphs is paused: the piece
// recorded so far is started, and recording goes on when the last one ends. Made around every
// call where the host meets the device (a wait, a copy from or to host memory, cudaFree) and
// around one-time setup that launches on a stream of its own (library handles), which no
// recording may hold. Nests; costs a thread-local read when no step records.
class HostMeeting {
 public:
  HostMeeting();
  ~HostMeeting();
  HostMeeting(const HostMeeting&) = delete;
  HostMeeting& operator=(const HostMeeting&) = delete;

 private:
  bool paused_ = false;
};

}  // namespace sa::cuda
