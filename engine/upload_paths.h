// How host-to-GPU uploads travelled, for tests and `bin/bench` (the switches in
// engine/cuda/cuda_device.cu's upload_async). No CUDA header here.
#pragma once
#include <cstdint>

namespace sa::cuda {

struct UploadPaths {
  int64_t staged = 0;          // through a pinned slot, returning at once
  int64_t on_copy_stream = 0;  // of those, sent on the copy stream (SA_COPY_STREAM=1)
};
// Since the process started, on `device` (zeros where CUDA is not built).
UploadPaths upload_paths(int device);

}  // namespace sa::cuda
