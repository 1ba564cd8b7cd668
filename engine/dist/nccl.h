// All-reduce of device memory between data-parallel ranks on GPUs, over NCCL (no CUDA header
// here). NCCL is opened with dlopen when first needed (it is large and optional: no link
// dependency). One NCCL communicator per process, made on first use from a unique id that rank 0
// broadcasts over MPI; it runs on the GPU's stream, so the sum is ordered with the step's kernels.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "engine/core/dtype.h"

namespace sa::dist {

// Whether NCCL can be used: a CUDA build whose toolkit had nccl.h, and libnccl.so.2 loadable at
// run time. Data-parallel GPU ranks then reduce dense gradients on the device; otherwise through
// host memory and MPI.
bool nccl_available();

// Where NCCL is looked for, in order: $SA_NCCL_LIBRARY (a path), the loader's own search
// (libnccl.so.2, libnccl.so), then pip's nvidia-nccl package, nvidia/nccl/lib/libnccl.so.2 in the
// site- or dist-packages of each Python under `lib_roots` (default: $VIRTUAL_ENV/lib,
// $CONDA_PREFIX/lib, ~/.local/lib, /usr/local/lib, /usr/lib, /opt/conda/lib), as GPU machines with
// a Python stack install it.
std::vector<std::string> nccl_library_candidates(const std::vector<std::string>& lib_roots = {});

// In place: the sum over all ranks of `n` elements of f32 or f64 at `data` on GPU `device`. Every
// rank must use one GPU and call it in the same order.
void nccl_allreduce_sum(int device, void* data, int64_t n, DType dt);

}  // namespace sa::dist
