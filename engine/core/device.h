// Where a tensor lives: the host, or CUDA device N.
#pragma once
#include <string>

namespace sa {

struct Device {
  enum Kind { CPU, CUDA } kind = CPU;
  int index = 0;

  static Device cpu() { return {CPU, 0}; }
  static Device cuda(int i = 0) { return {CUDA, i}; }
  bool is_cuda() const { return kind == CUDA; }
  bool operator==(const Device& o) const { return kind == o.kind && (kind == CPU || index == o.index); }
  bool operator!=(const Device& o) const { return !(*this == o); }
  std::string str() const { return kind == CPU ? "cpu" : "cuda:" + std::to_string(index); }
};

// "cpu", "cuda", "cuda:N" or "auto"; fails on anything else.
Device parse_device(const std::string& s);
// True when this binary was built with CUDA.
bool cuda_built();
// Number of usable GPUs (0 when not built with CUDA or no driver/device).
int cuda_device_count();
// The device to use for `requested` ("auto" = first GPU if any). When CUDA was asked for or is
// built in but no GPU is present, says so once on stderr and returns the CPU.
Device resolve_device(const std::string& requested = "auto");

}  // namespace sa
