// reshape, permute/transpose, slice, concat and split. All but reshape copy through one strided
// block-copy primitive; their backwards are the same copies in the other direction.
#include <numeric>

#include "engine/ops/op_util.h"
#include "engine/ops/ops.h"

namespace sa::ops {
using namespace detail;

namespace {

// Copies between a whole tensor `small` and the block [begin, begin + small.dim(axis)) along
// `axis` of `big`: into the block when `into_block`, out of it otherwise.
void copy_block(const Tensor& small, const Tensor& big, int axis, int64_t begin, bool into_block) {
  CopyPlan p;
  p.rank = small.rank();
  SA_CHECK(p.rank <= CopyPlan::kMaxRank, "copy: rank {} exceeds {}", p.rank, CopyPlan::kMaxRank);
  Shape ss = strides_of(small.shape()), bs = strides_of(big.shape());
  for (int k = 0; k < p.rank; ++k) {
    p.shape[k] = small.dim(k);
    p.src_stride[k] = into_block ? ss[k] : bs[k];
    p.dst_stride[k] = into_block ? bs[k] : ss[k];
  }
  (into_block ? p.dst_offset : p.src_offset) = begin * bs[axis];
  Tensor dst = into_block ? big : small;
  if (small.numel()) be(small).copy_strided(into_block ? small : big, dst, p);
}

Tensor permute_raw(const Tensor& x, const std::vector<int>& perm) {
  Shape os(perm.size());
  for (size_t k = 0; k < perm.size(); ++k) os[k] = x.dim(perm[k]);
  Tensor y = Tensor::empty(os, x.dtype(), x.device());
  CopyPlan p;
  p.rank = x.rank();
  SA_CHECK(p.rank <= CopyPlan::kMaxRank, "permute: rank {} exceeds {}", p.rank, CopyPlan::kMaxRank);
  Shape xs = strides_of(x.shape()), ys = strides_of(os);
  for (int k = 0; k < p.rank; ++k) {
    p.shape[k] = os[k];
    p.src_stride[k] = xs[perm[k]];
    p.dst_stride[k] = ys[k];
  }
  if (y.numel()) be(x).copy_strided(x, y, p);
  return y;
}

}  // namespace

Tensor reshape(const Tensor& x, const Shape& shape) {
  check_defined("reshape", {x});
  Shape s = shape;
  int64_t known = 1;
  int infer = -1;
  for (size_t k = 0; k < s.size(); ++k) {
    if (s[k] == -1) {
      SA_CHECK(infer < 0, "reshape: more than one -1 in {}", to_string(shape));
      infer = static_cast<int>(k);
    } else {
      known *= s[k];
    }
  }
  if (infer >= 0) {
    SA_CHECK(known > 0 && x.numel() % known == 0, "reshape: cannot reshape {} to {}", describe(x), to_string(shape));
    s[infer] = x.numel() / known;
  }
  SA_CHECK(numel(s) == x.numel(), "reshape: cannot reshape {} to {}", describe(x), to_string(shape));
  Tensor y = x.view(s);
  record(Op::reshape, {x}, {y},
         [=](const std::vector<Tensor>& gs) { accumulate_grad(x, gs[0].view(x.shape()), true); });
  return y;
}

Tensor permute(const Tensor& x, const std::vector<int>& perm) {
  check_defined("permute", {x});
  SA_CHECK(static_cast<int>(perm.size()) == x.rank(), "permute: {} axes given for {}", perm.size(), describe(x));
  std::vector<int> seen(perm.size(), 0), inv(perm.size());
  for (size_t k = 0; k < perm.size(); ++k) {
    SA_CHECK(perm[k] >= 0 && perm[k] < x.rank() && !seen[perm[k]]++, "permute: {} is not a permutation of the axes of {}",
             fmt::join(perm, ","), describe(x));
    inv[perm[k]] = static_cast<int>(k);
  }
  Tensor y = permute_raw(x, perm);
  record(Op::permute, {x}, {y}, [=](const std::vector<Tensor>& gs) { accumulate_grad(x, permute_raw(gs[0], inv), true); });
  return y;
}

Tensor transpose(const Tensor& x, int a0, int a1) {
  check_defined("transpose", {x});
  std::vector<int> perm(x.rank());
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[normalize_axis("transpose", a0, x.rank())], perm[normalize_axis("transpose", a1, x.rank())]);
  return permute(x, perm);
}

Tensor slice(const Tensor& x, int axis, int64_t begin, int64_t end) {
  check_defined("slice", {x});
  int ax = normalize_axis("slice", axis, x.rank());
  SA_CHECK(0 <= begin && begin <= end && end <= x.dim(ax), "slice: [{}, {}) is out of range for axis {} of {}", begin,
           end, ax, describe(x));
  Shape os = x.shape();
  os[ax] = end - begin;
  Tensor y = Tensor::empty(os, x.dtype(), x.device());
  copy_block(y, x, ax, begin, false);
  record(Op::slice, {x}, {y}, [=](const std::vector<Tensor>& gs) {
    Tensor gx = zeros_like(x);
    copy_block(gs[0], gx, ax, begin, true);
    accumulate_grad(x, gx, true);
  });
  return y;
}

Tensor concat(const std::vector<Tensor>& xs, int axis) {
  SA_CHECK(!xs.empty(), "concat: no tensors given");
  const Tensor& f = xs[0];
  int ax = normalize_axis("concat", axis, f.rank());
  Shape os = f.shape();
  os[ax] = 0;
  for (const Tensor& t : xs) {
    SA_CHECK(t.defined() && t.rank() == f.rank() && t.dtype() == f.dtype() && t.device() == f.device(),
             "concat: {} does not match {}", describe(t), describe(f));
    for (int k = 0; k < f.rank(); ++k)
      SA_CHECK(k == ax || t.dim(k) == f.dim(k), "concat: {} and {} differ outside axis {}", describe(f), describe(t),
               ax);
    os[ax] += t.dim(ax);
  }
  Tensor y = Tensor::empty(os, f.dtype(), f.device());
  std::vector<int64_t> begins;
  int64_t at = 0;
  for (const Tensor& t : xs) {
    begins.push_back(at);
    copy_block(t, y, ax, at, true);
    at += t.dim(ax);
  }
  record(Op::concat, xs, {y}, [=](const std::vector<Tensor>& gs) {
    for (size_t i = 0; i < xs.size(); ++i) {
      if (!xs[i].requires_grad()) continue;
      Tensor gx = like(xs[i]);
      copy_block(gx, gs[0], ax, begins[i], false);
      accumulate_grad(xs[i], gx, true);
    }
  });
  return y;
}

std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int axis) {
  check_defined("split", {x});
  int ax = normalize_axis("split", axis, x.rank());
  int64_t total = 0;
  for (int64_t s : sizes) total += s;
  SA_CHECK(total == x.dim(ax), "split: sizes sum to {} but axis {} of {} has {}", total, ax, describe(x), x.dim(ax));
  std::vector<Tensor> out;
  int64_t at = 0;
  for (int64_t s : sizes) {
    out.push_back(slice(x, ax, at, at + s));
    at += s;
  }
  return out;
}

std::vector<Tensor> unbind(const Tensor& x) {
  check_defined("unbind", {x});
  SA_CHECK(x.rank() >= 1, "unbind: needs at least one axis, got {}", describe(x));
  Shape row(x.shape().begin() + 1, x.shape().end());
  std::vector<Tensor> out;
  for (int64_t i = 0; i < x.dim(0); ++i) out.push_back(x.rows(i, i + 1).view(row));
  record(Op::unbind, {x}, out, [=](const std::vector<Tensor>& gs) {
    Tensor gx = like(x);
    for (int64_t i = 0; i < x.dim(0); ++i) {
      Tensor slot = gx.rows(i, i + 1).view(row);
      if (gs[i].defined())
        slot.copy_from(gs[i]);
      else
        be(x).fill(slot, 0.0);
    }
    accumulate_grad(x, gx, true);
  });
  return out;
}

}  // namespace sa::ops
