#include "engine/dist/tensor_collectives.h"

#include <unistd.h>

#include <cstring>
#include <functional>
#include <set>
#include <string>

#include "engine/core/autograd.h"
#include "engine/core/error.h"
#include "engine/backend.h"
#include "engine/dist/communicator.h"
#include "engine/dist/nccl.h"
#include "engine/ops/ops.h"

namespace sa::dist {

namespace {

// A contiguous host copy (tensors are dense; a CPU tensor is copied so the buffer is private).
Tensor host_copy(const Tensor& t) { return !t.device().is_cuda() ? t.clone() : t.to(Device::cpu()); }

Tensor tensor_from_bytes(const std::vector<char>& bytes, Shape shape, DType dt, Device dev) {
  Tensor h = Tensor::empty(shape, dt);
  if (!bytes.empty()) std::memcpy(h.raw(), bytes.data(), bytes.size());
  return h.to(dev);
}

}  // namespace

bool gradients_use_nccl(Device dev) {
  static const bool use = [&] {
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    const int64_t mine[3] = {dev.is_cuda() && nccl_available() ? 1 : 0, dev.is_cuda() ? dev.index : -1,
                             static_cast<int64_t>(std::hash<std::string>{}(host))};
    std::vector<char> all = allgather(mine, sizeof mine);
    std::vector<int64_t> v(all.size() / sizeof(int64_t));
    std::memcpy(v.data(), all.data(), all.size());
    std::set<std::pair<int64_t, int64_t>> gpus;  // (host, device)
    for (size_t r = 0; r + 2 < v.size(); r += 3)
      if (!v[r] || !gpus.insert({v[r + 2], v[r + 1]}).second) return false;
    return true;
  }();
  return use;
}

namespace {

// One flat host buffer for the dense gradients of one dtype. `dense[i]`: whether params[i] has a
// dense gradient on some rank (a table read by row gets one from a full softmax).
template <typename T>
void reduce_dense(const std::vector<Tensor>& params, const std::vector<double>& dense, DType dt, double inv_ranks) {
  std::vector<const Tensor*> ps;
  int64_t n = 0;
  for (size_t i = 0; i < params.size(); ++i)
    if (dense[i] > 0 && params[i].dtype() == dt) ps.push_back(&params[i]), n += params[i].numel();
  if (ps.empty()) return;
  const Device dev = ps[0]->device();
  bool one_gpu = dev.is_cuda();
  for (const Tensor* p : ps) one_gpu = one_gpu && p->device() == dev;
  if (one_gpu && gradients_use_nccl(dev)) {  // one flat device buffer, summed by NCCL
    NoGrad ng;
    Tensor flat = Tensor::zeros({n}, dt, dev);
    int64_t at = 0;
    for (const Tensor* p : ps) {
      if (Tensor g = p->grad(); g.defined()) flat.rows(at, at + p->numel()).copy_from(g.view({p->numel()}));
      at += p->numel();
    }
    nccl_allreduce_sum(dev.index, flat.raw(), n, dt);
    backend(dev).unary(UnaryOp::Scale, flat, flat, inv_ranks, 0);
    at = 0;
    for (const Tensor* p : ps) {
      const Tensor part = flat.rows(at, at + p->numel()).view(p->shape());
      at += p->numel();
      if (Tensor g = p->grad(); g.defined())
        g.copy_from(part);
      else
        p->impl()->grad = part.clone().impl_ptr();
    }
    return;
  }
  std::vector<T> flat(static_cast<size_t>(n), T(0));
  int64_t at = 0;
  for (const Tensor* p : ps) {  // a parameter this rank's loss did not reach adds zeros
    if (Tensor g = p->grad(); g.defined()) std::memcpy(flat.data() + at, host_copy(g).raw(), g.nbytes());
    at += p->numel();
  }
  allreduce_sum(flat.data(), n);
  for (T& v : flat) v = static_cast<T>(v * inv_ranks);
  at = 0;
  for (const Tensor* p : ps) {
    Tensor h = Tensor::empty(p->shape(), dt);
    std::memcpy(h.raw(), flat.data() + at, h.nbytes());
    at += p->numel();
    if (Tensor g = p->grad(); g.defined())
      g.copy_from(h);
    else
      p->impl()->grad = h.to(p->device()).impl_ptr();
  }
}

void gather_sparse(const Tensor& p, double inv_ranks) {
  SparseGrad& sg = p.sparse_grad();
  const int64_t width = p.numel() / p.dim(0);
  Tensor ids = Tensor::empty({0}, DType::I32), rows = Tensor::empty({0, width}, p.dtype());
  if (!sg.empty()) std::tie(ids, rows) = sg.coalesce();
  ids = host_copy(ids), rows = host_copy(rows);
  std::vector<char> all_ids = allgather(ids.raw(), static_cast<int64_t>(ids.nbytes()));
  std::vector<char> all_rows = allgather(rows.raw(), static_cast<int64_t>(rows.nbytes()));
  const int64_t total = static_cast<int64_t>(all_ids.size() / sizeof(int32_t));
  sg.clear();
  if (total == 0) return;
  NoGrad ng;
  sg.indices = {tensor_from_bytes(all_ids, {total}, DType::I32, p.device())};
  sg.rows = {ops::scale(tensor_from_bytes(all_rows, {total, width}, p.dtype(), p.device()), inv_ranks)};
  sg.coalesced = false;
  sg.coalesce_in_place();
}

}  // namespace

Tensor allgather_rows(const Tensor& local) {
  if (size() == 1) return local;
  const Tensor h = host_copy(local);
  std::vector<char> all = allgather(h.raw(), static_cast<int64_t>(h.nbytes()));
  Shape s = local.shape();
  int64_t width = 1;  // from the shape: a rank may hold no rows
  for (size_t i = 1; i < s.size(); ++i) width *= s[i];
  s[0] = static_cast<int64_t>(all.size() / (static_cast<size_t>(width) * dtype_size(local.dtype())));
  return tensor_from_bytes(all, s, local.dtype(), local.device());
}

Tensor mean_rows(const Tensor& local) {
  if (size() == 1) return ops::mean(local, 0, true);
  NoGrad ng;
  const Tensor s = host_copy(ops::sum(local, 0, true).to(DType::F64));
  std::vector<double> buf(static_cast<size_t>(s.numel()) + 1);
  std::memcpy(buf.data(), s.raw(), s.nbytes());
  buf.back() = static_cast<double>(local.dim(0));
  allreduce_sum(buf.data(), static_cast<int64_t>(buf.size()));
  const double rows = buf.back();
  buf.pop_back();
  for (double& v : buf) v /= rows;
  return Tensor::of(buf, s.shape(), local.dtype(), local.device());
}

void average_gradients(const std::vector<Tensor>& params) {
  const int n = size();
  if (n == 1) return;
  for (const Tensor& p : params)
    SA_CHECK(!p.requires_grad() || p.dtype() == DType::F32 || p.dtype() == DType::F64,
             "dist: parameter '{}' has dtype {}; data-parallel gradients are f32 or f64", p.name(), dtype_name(p.dtype()));
  const double inv = 1.0 / n;
  if (!params.empty()) gradients_use_nccl(params[0].device());  // the ranks decide together, on the first step
  // Which parameters have dense gradients: every row-free one, and a row-read table with one on
  // any rank; the ranks agree on the list before the flat buffers are laid out.
  std::vector<double> dense(params.size(), 0.0);
  for (size_t i = 0; i < params.size(); ++i)
    dense[i] = params[i].requires_grad() && (!params[i].is_sparse_grad() || params[i].grad().defined()) ? 1 : 0;
  allreduce_sum(dense.data(), static_cast<int64_t>(dense.size()));
  reduce_dense<float>(params, dense, DType::F32, inv);
  reduce_dense<double>(params, dense, DType::F64, inv);
  for (const Tensor& p : params)
    if (p.is_sparse_grad()) gather_sparse(p, inv);
}

double mean_over_ranks(double v) {
  allreduce_sum(&v, 1);
  return v / size();
}

}  // namespace sa::dist
