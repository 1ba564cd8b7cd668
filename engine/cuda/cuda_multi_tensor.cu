// CUDA: the multi-tensor primitives. One launch covers up to kMaxTensors tensors: their pointers and
// sizes travel in the kernel's arguments (no upload, no host wait), and each block takes one chunk
// of one tensor, found by a binary search over the chunk counts.
#include <algorithm>
#include <array>
#include <string>

#include "engine/core/bf16.h"
#include "engine/core/scalar_math.h"
#include "engine/cuda/cuda_backend.cuh"

namespace sa {

using namespace cudak;

namespace {

constexpr int kMaxTensors = 48;       // L=4 lists: about 2.8 KB of kernel arguments (4 KB allowed)
constexpr int64_t kChunk = 1 << 14;   // elements per block

template <int L>
struct TensorLists {
  void* ptr[L][kMaxTensors];
  int64_t n[kMaxTensors];
  double decay[kMaxTensors];             // Adam's weight decay per tensor
  int64_t first_block[kMaxTensors + 1];  // blocks of tensors before t; [count] is the launch's total
  int count;
};

// The tensor and element range of this block.
template <int L>
__device__ int locate(const TensorLists<L>& a, int64_t& begin, int64_t& end) {
  const int64_t b = blockIdx.x;
  int lo = 0, hi = a.count - 1;
  while (lo < hi) {  // the last t with first_block[t] <= b
    const int mid = (lo + hi + 1) / 2;
    if (a.first_block[mid] <= b) lo = mid;
    else hi = mid - 1;
  }
  begin = (b - a.first_block[lo]) * kChunk;
  end = begin + kChunk < a.n[lo] ? begin + kChunk : a.n[lo];
  return lo;
}

template <typename T>
__global__ void multi_sum_squares_kernel(TensorLists<1> a, double* pv) {
  int64_t b, e;
  const int t = locate(a, b, e);
  const T* x = static_cast<const T*>(a.ptr[0][t]);
  double s = 0;
  for (int64_t i = b + threadIdx.x; i < e; i += blockDim.x) s += double(x[i]) * double(x[i]);
  const double total = block_reduce<double, false>(s);
  if (threadIdx.x == 0) pv[blockIdx.x] = total;
}

template <typename T>
__global__ void multi_scale_kernel(TensorLists<1> a, const double* factor) {
  int64_t b, e;
  const int t = locate(a, b, e);
  T* x = static_cast<T*>(a.ptr[0][t]);
  const T f = T(*factor);
  for (int64_t i = b + threadIdx.x; i < e; i += blockDim.x) x[i] = x[i] * f;
}

template <typename T>
__global__ void multi_adagrad_kernel(TensorLists<3> a, T lr) {
  int64_t b, e;
  const int t = locate(a, b, e);
  T *w = static_cast<T*>(a.ptr[0][t]), *acc = static_cast<T*>(a.ptr[1][t]);
  const T* g = static_cast<const T*>(a.ptr[2][t]);
  for (int64_t i = b + threadIdx.x; i < e; i += blockDim.x) w[i] = math::adagrad(w[i], acc[i], g[i], lr);
}

template <typename T>
__global__ void multi_adam_kernel(TensorLists<4> a, math::AdamConsts<T> k) {
  int64_t b, e;
  const int t = locate(a, b, e);
  T *w = static_cast<T*>(a.ptr[0][t]), *m = static_cast<T*>(a.ptr[1][t]), *v = static_cast<T*>(a.ptr[2][t]);
  const T* g = static_cast<const T*>(a.ptr[3][t]);
  const T wd = T(a.decay[t]);
  for (int64_t i = b + threadIdx.x; i < e; i += blockDim.x) w[i] = math::adam_step(w[i], m[i], v[i], g[i], k, wd);
}

// f32 -> bf16 with the one-tensor cast's rounding (float_to_bf16), so a copy equals x.to(BF16).
__global__ void multi_to_bf16_kernel(TensorLists<2> a) {
  int64_t b, e;
  const int t = locate(a, b, e);
  const float* x = static_cast<const float*>(a.ptr[0][t]);
  uint16_t* y = static_cast<uint16_t*>(a.ptr[1][t]);
  for (int64_t i = b + threadIdx.x; i < e; i += blockDim.x) y[i] = float_to_bf16(x[i]);
}

// Packs the lists kMaxTensors tensors at a time (empty tensors skipped) and calls
// launch(args, blocks, blocks before this launch) for each pack.
// The lists' tensors pair up in size and, unless `one_dtype` is false (a cast), in dtype.
template <int L, typename Launch>
void for_each_pack(const char* op, const std::array<const std::vector<Tensor>*, L>& lists,
                   const std::vector<double>* decay, Launch&& launch, bool one_dtype = true) {
  const std::vector<Tensor>& first = *lists[0];
  for (int l = 1; l < L; ++l) {
    if (lists[l]->size() != first.size())
      fail_message(std::string(op) + ": lists of " + std::to_string(first.size()) + " and " +
                   std::to_string(lists[l]->size()) + " tensors");
    for (size_t i = 0; i < first.size(); ++i)
      if ((*lists[l])[i].numel() != first[i].numel() || (one_dtype && (*lists[l])[i].dtype() != first[i].dtype()))
        fail_message(std::string(op) + ": tensor " + std::to_string(i) + " of the lists differs in size or dtype");
  }
  TensorLists<L> a{};
  int64_t blocks = 0, before = 0;
  auto flush = [&] {
    if (a.count == 0) return;
    a.first_block[a.count] = blocks;
    launch(a, blocks, before);
    before += blocks;
    blocks = 0;
    a.count = 0;
  };
  for (size_t i = 0; i < first.size(); ++i) {
    if (first[i].dtype() != first[0].dtype()) fail_message(std::string(op) + ": tensors of more than one dtype in one call");
    const int64_t n = first[i].numel();
    if (n == 0) continue;
    const int c = a.count;
    for (int l = 0; l < L; ++l) a.ptr[l][c] = (*lists[l])[i].raw();
    a.n[c] = n;
    a.decay[c] = decay ? (*decay)[i] : 0.0;
    a.first_block[c] = blocks;
    blocks += (n + kChunk - 1) / kChunk;
    if (++a.count == kMaxTensors) flush();
  }
  flush();
}

int64_t total_blocks(const std::vector<Tensor>& xs) {
  int64_t b = 0;
  for (const Tensor& x : xs) b += (x.numel() + kChunk - 1) / kChunk;
  return b;
}

DType dtype_of(const std::vector<Tensor>& xs) { return xs.empty() ? DType::F32 : xs[0].dtype(); }

}  // namespace

void CudaBackend::multi_sum_squares(const std::vector<Tensor>& xs, Tensor& out) {
  Tensor pv = Tensor::empty({std::max<int64_t>(1, total_blocks(xs))}, DType::F64, out.device());
  dispatch(dtype_of(xs), "multi_sum_squares", [&](auto tag) {
    using T = decltype(tag);
    for_each_pack<1>("multi_sum_squares", {&xs}, nullptr, [&](const TensorLists<1>& a, int64_t blocks, int64_t before) {
      multi_sum_squares_kernel<T><<<static_cast<unsigned>(blocks), kThreads, 0, stream()>>>(a, pv.data<double>() + before);
      CUDA_LAUNCHED("multi_sum_squares");
    });
  });
  sum_partials_kernel<double><<<1, kThreads, 0, stream()>>>(pv.data<double>(), total_blocks(xs), out.data<double>());
  CUDA_LAUNCHED("multi_sum_squares");
}

void CudaBackend::multi_scale(const std::vector<Tensor>& xs, const Tensor& factor) {
  dispatch(dtype_of(xs), "multi_scale", [&](auto tag) {
    using T = decltype(tag);
    for_each_pack<1>("multi_scale", {&xs}, nullptr, [&](const TensorLists<1>& a, int64_t blocks, int64_t) {
      multi_scale_kernel<T><<<static_cast<unsigned>(blocks), kThreads, 0, stream()>>>(a, factor.data<double>());
      CUDA_LAUNCHED("multi_scale");
    });
  });
}

void CudaBackend::multi_adagrad(const std::vector<Tensor>& w, const std::vector<Tensor>& acc,
                                const std::vector<Tensor>& g, double lr) {
  dispatch(dtype_of(w), "multi_adagrad", [&](auto tag) {
    using T = decltype(tag);
    for_each_pack<3>("multi_adagrad", {&w, &acc, &g}, nullptr, [&](const TensorLists<3>& a, int64_t blocks, int64_t) {
      multi_adagrad_kernel<T><<<static_cast<unsigned>(blocks), kThreads, 0, stream()>>>(a, T(lr));
      CUDA_LAUNCHED("multi_adagrad");
    });
  });
}

void CudaBackend::multi_adam(const std::vector<Tensor>& w, const std::vector<Tensor>& m, const std::vector<Tensor>& v,
                             const std::vector<Tensor>& g, const std::vector<double>& weight_decay,
                             const AdamHyper& h) {
  capture_refuse("Adam's learning rate and bias corrections are the step's own");
  if (weight_decay.size() != w.size())
    fail_message("multi_adam: " + std::to_string(weight_decay.size()) + " weight decays for " + std::to_string(w.size()) +
                 " tensors");
  dispatch(dtype_of(w), "multi_adam", [&](auto tag) {
    using T = decltype(tag);
    const auto k = math::AdamConsts<T>::of(h);
    for_each_pack<4>("multi_adam", {&w, &m, &v, &g}, &weight_decay,
                     [&](const TensorLists<4>& a, int64_t blocks, int64_t) {
                       multi_adam_kernel<T><<<static_cast<unsigned>(blocks), kThreads, 0, stream()>>>(a, k);
                       CUDA_LAUNCHED("multi_adam");
                     });
  });
}

// The bf16 weight copies of a step in one launch per kMaxTensors; any other conversion tensor by
// tensor (cast()).
void CudaBackend::multi_cast(const std::vector<Tensor>& src, const std::vector<Tensor>& dst) {
  bool to_bf16 = src.size() == dst.size();
  for (size_t i = 0; to_bf16 && i < src.size(); ++i)
    to_bf16 = src[i].dtype() == DType::F32 && dst[i].dtype() == DType::BF16;
  if (!to_bf16) {
    if (src.size() != dst.size())
      fail_message("multi_cast: lists of " + std::to_string(src.size()) + " and " + std::to_string(dst.size()) + " tensors");
    for (size_t i = 0; i < src.size(); ++i) {
      if (src[i].numel() != dst[i].numel())
        fail_message("multi_cast: tensor " + std::to_string(i) + " of the lists differs in size");
      Tensor d = dst[i];
      cast(src[i], d);
    }
    return;
  }
  for_each_pack<2>("multi_cast", {&src, &dst}, nullptr, [&](const TensorLists<2>& a, int64_t blocks, int64_t) {
    multi_to_bf16_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream()>>>(a);
    CUDA_LAUNCHED("multi_cast");
  }, false);
}

}  // namespace sa
