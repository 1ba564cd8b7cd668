// Built instead of the CUDA backend when CUDA=0 (or no toolkit is found).
#include "engine/backend.h"
#include "engine/core/error.h"

namespace sa::cuda {

bool built() { return false; }
int device_count() { return 0; }
Backend& backend(int device) { fail("cuda:{} requested, but this binary was built without CUDA (make CUDA=0)", device); }
void* stream_of(int device) { fail("cuda:{} stream requested, but this binary was built without CUDA", device); }
void copy(void*, Device, const void*, Device, size_t) { fail("CUDA copy requested, but this binary was built without CUDA"); }
std::string describe_device(int) { return "no CUDA (built with CUDA=0)"; }
bool fused_attention_on_tensor_cores(int, int64_t, bool) { return false; }

}  // namespace sa::cuda

#include "engine/bench_support.h"
#include "engine/upload_paths.h"

namespace sa::cuda {
UploadPaths upload_paths(int) { return {}; }
}  // namespace sa::cuda

namespace sa::cuda {
double raw_gemm_seconds(int, int64_t, int64_t, int64_t, int, bool) { fail("CUDA benchmark requested, but built without CUDA"); }
GemmPairSeconds raw_tf32_gemm_plain_vs_batched(int, int64_t, int64_t, int64_t, bool, int) {
  fail("CUDA benchmark requested, but built without CUDA");
}
}  // namespace sa::cuda
