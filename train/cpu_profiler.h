// gperftools' CPU profiler around a stretch of the host's work (bench train --profile): where a
// step's host time goes, on the CPU machine and on a GPU machine alike. The library is opened at
// run time, so nothing links against it; `google-pprof --text bin/bench FILE` reads the profile.
#pragma once
#include <string>

namespace sa {

class CpuProfiler {
 public:
  // Starts writing samples to `path`; throws with what to install when libprofiler is missing.
  void start(const std::string& path);
  // Flushes and closes the profile (nothing when not started).
  void stop();
  ~CpuProfiler() { stop(); }

 private:
  void* lib_ = nullptr;
  bool running_ = false;
};

}  // namespace sa
