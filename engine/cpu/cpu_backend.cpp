// The CPU backend instance.
#include "engine/cpu/cpu_backend.h"

namespace sa {

Backend& cpu_backend() {
  static CpuBackend b;
  return b;
}

}  // namespace sa
