#include "train/cpu_profiler.h"

#include <dlfcn.h>

#include <cstdlib>

#include "engine/core/error.h"

namespace sa {

void CpuProfiler::start(const std::string& path) {
  SA_CHECK(!running_, "the CPU profiler is already running");
  // 1,000 samples a second, not gperftools' 100: 20 timed steps of ~35 ms give hundreds of samples,
  // not tens. Read when the library loads; the user's own setting wins.
  setenv("CPUPROFILE_FREQUENCY", "1000", 0);
  if (!lib_) lib_ = dlopen("libprofiler.so.0", RTLD_NOW | RTLD_GLOBAL);
  SA_CHECK(lib_, "--profile needs gperftools' libprofiler.so.0 (Debian: libgoogle-perftools4; the GPU bundle "
                 "carries it in lib/): {}", dlerror());
  auto begin = reinterpret_cast<int (*)(const char*)>(dlsym(lib_, "ProfilerStart"));
  SA_CHECK(begin, "libprofiler.so.0 has no ProfilerStart");
  SA_CHECK(begin(path.c_str()) != 0, "the CPU profiler could not start writing {}", path);
  running_ = true;
}

void CpuProfiler::stop() {
  if (!running_) return;
  running_ = false;
  if (auto end = reinterpret_cast<void (*)()>(dlsym(lib_, "ProfilerStop"))) end();
}

}  // namespace sa
