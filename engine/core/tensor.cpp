#include "engine/core/tensor.h"

#include "engine/core/device_counters.h"

#include <algorithm>
#include <cstring>
#include <map>

#include "engine/backend.h"
#include "engine/core/bf16.h"
#include "engine/core/capture_hooks.h"
#include "engine/core/error.h"

namespace sa {

Storage::Storage(size_t n, Device d) : bytes(n), device(d), pool(capture_hooks::pool(d)) {
  ptr = pool ? pool->allocate(n) : backend_uncounted(d).allocator().allocate(n);
}
Storage::~Storage() {
  if (owns) pool ? pool->deallocate(ptr) : backend_uncounted(device).allocator().deallocate(ptr);
}

static std::shared_ptr<TensorImpl> new_impl(const Shape& shape, DType dtype, Device dev) {
  for (int64_t d : shape) SA_CHECK(d >= 0, "tensor: negative extent in shape {}", to_string(shape));
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::make_shared<Storage>(static_cast<size_t>(numel(shape)) * dtype_size(dtype), dev);
  impl->shape = shape;
  impl->dtype = dtype;
  return impl;
}

Tensor Tensor::empty(const Shape& shape, DType dtype, Device dev) { return Tensor(new_impl(shape, dtype, dev)); }

Tensor Tensor::zeros(const Shape& shape, DType dtype, Device dev) { return full(shape, 0.0, dtype, dev); }

Tensor Tensor::full(const Shape& shape, double value, DType dtype, Device dev) {
  Tensor t = empty(shape, dtype, dev);
  backend(dev).fill(t, value);
  return t;
}

template <typename T>
Tensor Tensor::from(const std::vector<T>& values, const Shape& shape, Device dev) {
  SA_CHECK(static_cast<int64_t>(values.size()) == sa::numel(shape), "tensor: {} values given for shape {}",
           values.size(), to_string(shape));
  Tensor host = empty(shape, dtype_of<T>(), Device::cpu());
  if (!values.empty()) std::memcpy(host.raw(), values.data(), values.size() * sizeof(T));
  if (dev == Device::cpu()) {
    counters::upload();  // a GPU run copies it over (counted in copy_from)
    capture_hooks::uploaded(host);
  }
  return dev == Device::cpu() ? host : host.to(dev);
}
template Tensor Tensor::from(const std::vector<float>&, const Shape&, Device);
template Tensor Tensor::from(const std::vector<double>&, const Shape&, Device);
template Tensor Tensor::from(const std::vector<int32_t>&, const Shape&, Device);
template Tensor Tensor::from(const std::vector<uint8_t>&, const Shape&, Device);

Tensor Tensor::of(const std::vector<double>& values, const Shape& shape, DType dtype, Device dev) {
  // In a step captured for replay on a GPU, the upload must be the caller's bytes (what a replay
  // refills, engine/step_replay.h): the doubles go up and are cast there. Elsewhere the host casts,
  // and uploads half the bytes without a device temporary (an initial table can be gigabytes).
  if (dev.is_cuda() && capture_hooks::pool(dev)) {
    Tensor d = from(values, shape, dev);
    return dtype == DType::F64 ? d : d.to(dtype);
  }
  Tensor d = from(values, shape, Device::cpu());
  Tensor c = dtype == DType::F64 ? d : d.to(dtype);
  return dev == Device::cpu() ? c : c.to(dev);
}

const Shape& Tensor::shape() const {
  SA_CHECK(impl_, "tensor: use of an undefined tensor");
  return impl_->shape;
}
int64_t Tensor::dim(int axis) const { return shape()[normalize_axis("dim", axis, rank())]; }
DType Tensor::dtype() const {
  SA_CHECK(impl_, "tensor: use of an undefined tensor");
  return impl_->dtype;
}
Device Tensor::device() const {
  SA_CHECK(impl_, "tensor: use of an undefined tensor");
  return impl_->storage->device;
}
void* Tensor::raw() const {
  SA_CHECK(impl_, "tensor: use of an undefined tensor");
  return static_cast<char*>(impl_->storage->ptr) + impl_->offset;
}

template <typename T>
T* Tensor::data() const {
  SA_CHECK(dtype() == dtype_of<T>(), "tensor: data<{}>() on a {} tensor", dtype_name(dtype_of<T>()),
           dtype_name(dtype()));
  return static_cast<T*>(raw());
}
template float* Tensor::data<float>() const;
template double* Tensor::data<double>() const;
template int32_t* Tensor::data<int32_t>() const;
template uint8_t* Tensor::data<uint8_t>() const;
template <>
uint16_t* Tensor::data<uint16_t>() const {
  SA_CHECK(dtype() == DType::BF16, "tensor: data<bf16>() on a {} tensor", dtype_name(dtype()));
  return static_cast<uint16_t*>(raw());
}

void Tensor::copy_from(const Tensor& src) {
  SA_CHECK(src.shape() == shape() && src.dtype() == dtype(), "copy: source {} does not match destination {}",
           describe(src), describe(*this));
  Device a = device(), b = src.device();
  if (nbytes() == 0) {
    // An empty upload still keeps its place among a captured step's inputs (engine/step_replay.h).
    if (a.is_cuda() && !b.is_cuda()) cuda::copy(raw(), a, src.raw(), b, 0);
    return;
  }
  if (!a.is_cuda() && !b.is_cuda()) {
    if (cpu_arithmetic()) std::memcpy(raw(), src.raw(), nbytes());  // without: a GPU's copy, queued
    capture_hooks::copied(src, *this);
  } else {
    if (a.is_cuda() != b.is_cuda()) a.is_cuda() ? counters::upload() : counters::host_read();
    cuda::copy(raw(), a, src.raw(), b, nbytes());
  }
}

Tensor Tensor::to(Device dev) const {
  if (dev == device()) return *this;
  Tensor out = empty(shape(), dtype(), dev);
  out.copy_from(*this);
  return out;
}

Tensor Tensor::to(DType t) const {
  if (t == dtype()) return *this;
  Tensor out = empty(shape(), t, device());
  backend(device()).cast(*this, out);
  return out;
}

Tensor Tensor::clone() const {
  Tensor out = empty(shape(), dtype(), device());
  out.copy_from(*this);
  return out;
}

Tensor Tensor::to_host() const {
  if (!device().is_cuda()) counters::host_read();  // a GPU tensor counts in copy_from
  return to(Device::cpu());
}

std::vector<double> Tensor::values() const {
  const Tensor h = to_host();
  std::vector<double> v(static_cast<size_t>(numel()));
  for (size_t i = 0; i < v.size(); ++i) {
    switch (dtype()) {
      case DType::F32: v[i] = h.data<float>()[i]; break;
      case DType::F64: v[i] = h.data<double>()[i]; break;
      case DType::BF16: v[i] = bf16_to_float(h.data<uint16_t>()[i]); break;
      case DType::I32: v[i] = h.data<int32_t>()[i]; break;
      case DType::U8: v[i] = h.data<uint8_t>()[i]; break;
    }
  }
  return v;
}

double Tensor::item() const {
  SA_CHECK(numel() == 1, "item: tensor {} has more than one element", describe(*this));
  return values()[0];
}

Tensor Tensor::view(const Shape& s) const {
  SA_CHECK(sa::numel(s) == numel(), "view: cannot view {} as {}", describe(*this), to_string(s));
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = impl_->storage;
  impl->offset = impl_->offset;
  impl->shape = s;
  impl->dtype = impl_->dtype;
  return Tensor(impl);
}

Tensor Tensor::rows(int64_t begin, int64_t end) const {
  SA_CHECK(rank() >= 1 && 0 <= begin && begin <= end && end <= dim(0), "rows: [{}, {}) out of range for {}",
           begin, end, describe(*this));
  Shape s = shape();
  int64_t row = s[0] ? numel() / s[0] : 0;
  s[0] = end - begin;
  Tensor v = view(shape());
  v.impl_->shape = s;
  v.impl_->offset += static_cast<size_t>(begin * row) * dtype_size(dtype());
  return v;
}

Tensor& Tensor::set_requires_grad(bool on) {
  SA_CHECK(!on || is_float(dtype()), "requires_grad: tensor {} is not of a float type", describe(*this));
  impl_->requires_grad = on;
  return *this;
}

Tensor& Tensor::set_sparse_grad(bool on) {
  SA_CHECK(!on || rank() == 2, "sparse gradients need a 2-D table, got {}", describe(*this));
  impl_->sparse = on;
  return *this;
}

Tensor Tensor::grad() const { return impl_ && impl_->grad ? Tensor(impl_->grad) : Tensor(); }

void Tensor::zero_grad() const {
  impl_->grad.reset();
  impl_->sparse_grad.clear();
}

Tensor& Tensor::set_name(std::string n) {
  impl_->name = std::move(n);
  return *this;
}
const std::string& Tensor::name() const { return impl_->name; }

std::string describe(const Tensor& t) {
  if (!t.defined()) return "<undefined>";
  std::string s = std::string(dtype_name(t.dtype())) + to_string(t.shape()) + "@" + t.device().str();
  return t.name().empty() ? s : t.name() + ":" + s;
}

void SparseGrad::clear() {
  indices.clear();
  rows.clear();
  coalesced = padded = false;
}

void SparseGrad::coalesce_in_place(bool allow_padding) {
  if (empty() || (coalesced && (allow_padding || !padded))) return;
  auto [ids, summed] = coalesce(allow_padding);
  clear();
  indices.push_back(ids);
  rows.push_back(summed);
  coalesced = true;
  padded = allow_padding && (ids.device().is_cuda() || (ids.numel() > 0 && ids.data<int32_t>()[ids.numel() - 1] < 0));
}

std::pair<Tensor, Tensor> SparseGrad::coalesce(bool allow_padding) const {
  if (indices.empty()) return {};
  Device dev = rows[0].device();
  DType dt = rows[0].dtype();
  int64_t width = rows[0].dim(1), M = 0;
  if (indices.size() == 1)  // nothing to gather first
    return backend(dev).coalesce_rows(indices[0].view({indices[0].numel()}), rows[0].view({indices[0].numel(), width}),
                                      allow_padding);
  for (const Tensor& ix : indices) M += ix.numel();
  // All entries as one list, summed by the backend (on a GPU: sorted there, no host round trip).
  Tensor ids = Tensor::empty({M}, DType::I32, dev), all = Tensor::empty({M, width}, dt, dev);
  int64_t at = 0;
  for (size_t k = 0; k < indices.size(); ++k) {
    const int64_t n = indices[k].numel();
    Tensor ids_part = ids.rows(at, at + n), rows_part = all.rows(at, at + n);
    ids_part.copy_from(indices[k].view({n}));
    rows_part.copy_from(rows[k].view({n, width}));
    at += n;
  }
  return backend(dev).coalesce_rows(ids, all, allow_padding);
}

Tensor SparseGrad::to_dense(int64_t n_rows, int64_t width) const {
  DType dt = rows.empty() ? DType::F32 : rows[0].dtype();
  Device dev = rows.empty() ? Device::cpu() : rows[0].device();
  Tensor dense = Tensor::zeros({n_rows, width}, dt, dev);
  for (size_t k = 0; k < indices.size(); ++k) backend(dev).scatter_add_rows(rows[k], indices[k], dense);
  return dense;
}

}  // namespace sa
