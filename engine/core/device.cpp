#include "engine/core/device.h"

#include <cstdio>
#include <mutex>

#include "engine/backend.h"
#include "engine/core/error.h"

namespace sa {

Device parse_device(const std::string& s) {
  if (s == "cpu") return Device::cpu();
  if (s == "cuda" || s == "gpu") return Device::cuda(0);
  if (s.rfind("cuda:", 0) == 0) {
    try {
      size_t used = 0;
      int i = std::stoi(s.substr(5), &used);
      if (used == s.size() - 5 && i >= 0) return Device::cuda(i);
    } catch (const std::exception&) {
    }
  }
  fail("unknown device '{}': expected cpu, cuda, cuda:N or auto", s);
}

bool cuda_built() { return cuda::built(); }

int cuda_device_count() { return cuda::built() ? cuda::device_count() : 0; }

Device resolve_device(const std::string& requested) {
  static std::once_flag said;
  auto fallback = [&](const char* why) {
    std::call_once(said, [&] { std::fprintf(stderr, "sensealign: %s; running on the CPU.\n", why); });
    return Device::cpu();
  };
  if (requested == "cpu") return Device::cpu();
  int n = cuda_device_count();
  if (requested == "auto") {
    if (n > 0) return Device::cuda(0);
    if (cuda_built()) return fallback("built with CUDA but no GPU is visible");
    return Device::cpu();
  }
  Device d = parse_device(requested);
  if (!cuda_built()) return fallback("this binary was built without CUDA (make CUDA=0)");
  if (n == 0) return fallback("built with CUDA but no GPU is visible");
  SA_CHECK(d.index < n, "device {} requested but only {} GPU(s) are visible", d.str(), n);
  return d;
}

}  // namespace sa
