// Whether the calling thread is recording a CUDA graph (engine/cuda/cuda_graphs.cu), for the
// allocator: out of memory then fails at once instead of giving the cache back (cudaFree waits
// for the device, which a recording forbids); the chain's rerun, launch by launch, gives it back.
#pragma once

namespace sa {

// Marks the calling thread as recording for its lifetime (scopes nest).
class RecordingScope {
 public:
  RecordingScope();
  ~RecordingScope();
  RecordingScope(const RecordingScope&) = delete;
  RecordingScope& operator=(const RecordingScope&) = delete;
  static bool active();
};

}  // namespace sa
