// Tensor: a shared handle to contiguous row-major storage on one device, plus the autograd
// fields the tape needs (gradient, row-sparse gradient, requires_grad).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/core/device.h"
#include "engine/core/dtype.h"
#include "engine/core/shape.h"

namespace sa {

class CachingAllocator;

// A block of device or host memory from that device's caching allocator, or from the pool of a
// step being captured (engine/step_replay.h), which it keeps alive. A borrowed block (`owns`
// false) is another storage's memory, which a captured step's kept work names.
struct Storage {
  void* ptr = nullptr;
  size_t bytes = 0;
  Device device;
  std::shared_ptr<CachingAllocator> pool;
  bool owns = true;
  Storage(size_t bytes, Device d);
  Storage(void* borrowed, size_t bytes, Device d) : ptr(borrowed), bytes(bytes), device(d), owns(false) {}
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
};

class Tensor;

// Row-sparse gradient of a table: the rows touched in a step and their gradients, appended once
// per use and summed per row by coalesce(). Only these rows are read or written by the optimizer.
struct SparseGrad {
  std::vector<Tensor> indices;  // each i32 [n_k]
  std::vector<Tensor> rows;     // each [n_k, row_width], the table's dtype and device
  bool coalesced = false;       // one entry with unique sorted ids (set by coalesce_in_place)
  bool padded = false;          // ...then slots of id -1, zero rows (allow_padding: a GPU, a captured CPU step)
  bool empty() const { return indices.empty(); }
  void clear();
  // Returns unique sorted row ids (i32 [u]) and summed rows ([u, width]); empty tensors if none.
  // allow_padding: a GPU may return one slot per entry instead, the distinct ids first and then
  // id -1 with zero rows, so that it never waits to read how many ids are distinct (the optimizer
  // and the gradient norm take such slots as they are). Negative ids are padding, dropped.
  std::pair<Tensor, Tensor> coalesce(bool allow_padding = false) const;
  // Replaces the entries by their coalesced form (padded only where allowed).
  void coalesce_in_place(bool allow_padding = false);
  // The dense [n_rows, width] gradient (for tests and small tables).
  Tensor to_dense(int64_t n_rows, int64_t width) const;
};

struct TensorImpl {
  std::shared_ptr<Storage> storage;
  size_t offset = 0;  // bytes into storage
  Shape shape;
  DType dtype = DType::F32;
  // autograd
  bool requires_grad = false;
  bool sparse = false;   // gathers from this tensor produce a SparseGrad instead of a dense grad
  std::shared_ptr<TensorImpl> grad;  // dense gradient, same shape/dtype/device
  SparseGrad sparse_grad;
  std::string name;      // optional, used in error messages
};

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  static Tensor empty(const Shape& shape, DType dtype = DType::F32, Device dev = Device::cpu());
  static Tensor zeros(const Shape& shape, DType dtype = DType::F32, Device dev = Device::cpu());
  static Tensor full(const Shape& shape, double value, DType dtype = DType::F32, Device dev = Device::cpu());
  template <typename T>
  static Tensor from(const std::vector<T>& values, const Shape& shape, Device dev = Device::cpu());
  // Values given as doubles, stored in `dtype` (a float type or i32/u8).
  static Tensor of(const std::vector<double>& values, const Shape& shape, DType dtype = DType::F32,
                   Device dev = Device::cpu());

  bool defined() const { return impl_ != nullptr; }
  const Shape& shape() const;
  int rank() const { return static_cast<int>(shape().size()); }
  int64_t dim(int axis) const;
  int64_t numel() const { return sa::numel(shape()); }
  DType dtype() const;
  Device device() const;
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype()); }

  void* raw() const;
  template <typename T>
  T* data() const;

  // Copies to another device (same dtype) or converts dtype (same device). Not recorded on the tape.
  Tensor to(Device dev) const;
  Tensor to(DType dtype) const;
  Tensor clone() const;
  // Copies `src` (same shape and dtype, any device) into this tensor's memory.
  void copy_from(const Tensor& src);
  // All elements as doubles on the host (any dtype); for tests, logs and small reads.
  std::vector<double> values() const;
  // The tensor on the host, its values read as they are (large reads): counted as a host read on
  // every device, as values() is, so CPU counts show where a GPU run reads.
  Tensor to_host() const;
  double item() const;

  // Views share storage and are not recorded on the tape (use ops::reshape / ops::slice for that).
  Tensor view(const Shape& shape) const;
  // The same storage, cut from the tape (for state carried across batches).
  Tensor detach() const { return view(shape()); }
  Tensor rows(int64_t begin, int64_t end) const;

  // autograd
  bool requires_grad() const { return impl_ && impl_->requires_grad; }
  Tensor& set_requires_grad(bool on = true);
  // Marks a table whose gathered rows get row-sparse gradients (embeddings, softmax tables).
  Tensor& set_sparse_grad(bool on = true);
  bool is_sparse_grad() const { return impl_ && impl_->sparse; }
  Tensor grad() const;
  SparseGrad& sparse_grad() const { return impl_->sparse_grad; }
  void zero_grad() const;
  Tensor& set_name(std::string n);
  const std::string& name() const;

  TensorImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }
  bool same(const Tensor& o) const { return impl_ == o.impl_; }

 private:
  std::shared_ptr<TensorImpl> impl_;
};

// "f32[2,3]@cpu" for messages.
std::string describe(const Tensor& t);

}  // namespace sa
