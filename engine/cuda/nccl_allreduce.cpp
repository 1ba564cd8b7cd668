// dist/nccl.h over NCCL, loaded at run time: the library is large and optional, so binaries run
// (with host-staged all-reduces) where it is not installed.
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <nccl.h>

#include <cstring>
#include <string>

#include "engine/backend.h"
#include "engine/core/error.h"
#include "engine/dist/communicator.h"
#include "engine/dist/nccl.h"

namespace sa::dist {

namespace {

struct NcclLibrary {
  void* handle = nullptr;
  decltype(&ncclGetUniqueId) get_unique_id = nullptr;
  decltype(&ncclCommInitRank) comm_init_rank = nullptr;
  decltype(&ncclAllReduce) all_reduce = nullptr;
  decltype(&ncclGetErrorString) error_string = nullptr;
  NcclLibrary() {
    for (const std::string& name : nccl_library_candidates())
      if ((handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL))) break;
    if (!handle) return;
    get_unique_id = reinterpret_cast<decltype(get_unique_id)>(dlsym(handle, "ncclGetUniqueId"));
    comm_init_rank = reinterpret_cast<decltype(comm_init_rank)>(dlsym(handle, "ncclCommInitRank"));
    all_reduce = reinterpret_cast<decltype(all_reduce)>(dlsym(handle, "ncclAllReduce"));
    error_string = reinterpret_cast<decltype(error_string)>(dlsym(handle, "ncclGetErrorString"));
    if (!get_unique_id || !comm_init_rank || !all_reduce || !error_string) handle = nullptr;
  }
  void check(ncclResult_t r, const char* what) const {
    if (r != ncclSuccess) fail("NCCL error in {}: {}", what, error_string(r));
  }
};

const NcclLibrary& library() {
  static NcclLibrary lib;
  return lib;
}

struct NcclComm {
  ncclComm_t comm = nullptr;
  int device = -1;
  explicit NcclComm(int dev) : device(dev) {
    const NcclLibrary& lib = library();
    ncclUniqueId id{};
    std::string bytes(sizeof id, '\0');
    if (rank() == 0) {
      lib.check(lib.get_unique_id(&id), "ncclGetUniqueId");
      std::memcpy(bytes.data(), &id, sizeof id);
    }
    broadcast(bytes);
    std::memcpy(&id, bytes.data(), sizeof id);
    sa::cuda::backend(dev);  // binds the thread to the device (and records it, engine/cuda/cuda_device.cu)
    lib.check(lib.comm_init_rank(&comm, size(), id, rank()), "ncclCommInitRank");
  }
};

}  // namespace

bool nccl_available() { return library().handle != nullptr; }

void nccl_allreduce_sum(int device, void* data, int64_t n, DType dt) {
  SA_CHECK(nccl_available(), "NCCL all-reduce requested, but libnccl.so.2 could not be loaded");
  static NcclComm c(device);
  SA_CHECK(c.device == device, "NCCL: this rank's communicator is on cuda:{}, not cuda:{} (one GPU per rank)", c.device,
           device);
  SA_CHECK(dt == DType::F32 || dt == DType::F64, "NCCL all-reduce: {} is not f32 or f64", dtype_name(dt));
  if (n == 0) return;
  // On the backend's stream: the reduce is ordered after the backward that wrote the gradients.
  library().check(library().all_reduce(data, data, static_cast<size_t>(n), dt == DType::F32 ? ncclFloat32 : ncclFloat64,
                                       ncclSum, c.comm, static_cast<cudaStream_t>(cuda::stream_of(device))),
                  "ncclAllReduce");
}

}  // namespace sa::dist
