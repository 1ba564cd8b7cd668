// dist/nccl.h for builds without NCCL: GPU ranks reduce through host memory and MPI.
#include "engine/core/error.h"
#include "engine/dist/nccl.h"

namespace sa::dist {

bool nccl_available() { return false; }
void nccl_allreduce_sum(int, void*, int64_t, DType) { fail("NCCL all-reduce requested, but built without NCCL"); }

}  // namespace sa::dist
