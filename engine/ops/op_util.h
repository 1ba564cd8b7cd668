// Helpers shared by the op implementations: argument checks and gradient plumbing.
#pragma once
#include "engine/backend.h"
#include "engine/core/autograd.h"
#include "engine/core/error.h"
#include "engine/ops/op_table.h"

namespace sa::ops::detail {

// The backend of t's device, for one primitive: look it up per call, never keep the reference
// across calls (the launch counter counts the lookups).
inline Backend& be(const Tensor& t) { return backend(t.device()); }
inline Tensor like(const Tensor& t) { return Tensor::empty(t.shape(), t.dtype(), t.device()); }
inline Tensor zeros_like(const Tensor& t) { return Tensor::zeros(t.shape(), t.dtype(), t.device()); }

// Records the op's tape node under its name in the op table. Ops record only through this (never
// sa::record with a string), so every name on the tape is a table entry.
inline void record(Op op, std::vector<Tensor> inputs, std::vector<Tensor> outputs, BackwardFn backward) {
  sa::record(op_name(op), std::move(inputs), std::move(outputs), std::move(backward));
}

inline void check_defined(const char* op, std::initializer_list<Tensor> ts) {
  for (const Tensor& t : ts) SA_CHECK(t.defined(), "{}: an input tensor is undefined", op);
}

// All inputs on one device, all of one float dtype.
inline void check_same(const char* op, std::initializer_list<Tensor> ts) {
  check_defined(op, ts);
  const Tensor& f = *ts.begin();
  SA_CHECK(is_float(f.dtype()), "{}: expected a float tensor, got {}", op, describe(f));
  for (const Tensor& t : ts) {
    SA_CHECK(t.device() == f.device(), "{}: tensors on different devices: {} and {}", op, describe(f), describe(t));
    SA_CHECK(t.dtype() == f.dtype(), "{}: dtype mismatch: {} and {}", op, describe(f), describe(t));
  }
}

inline void check_index(const char* op, const Tensor& idx, const Tensor& ref) {
  SA_CHECK(idx.dtype() == DType::I32, "{}: indices must be i32, got {}", op, describe(idx));
  SA_CHECK(idx.device() == ref.device(), "{}: indices {} and table {} are on different devices", op, describe(idx),
           describe(ref));
}

// The gradient g [n, d] of rows idx (i32 [n]) of a 2-D table: row-sparse when the table keeps
// sparse gradients, otherwise scattered into a dense one.
inline void accumulate_rows(const Tensor& table, const Tensor& idx, const Tensor& g) {
  if (table.is_sparse_grad()) {
    accumulate_sparse_grad(table, idx, g);
  } else {
    Tensor gt = zeros_like(table);
    be(table).scatter_add_rows(g, idx, gt);
    accumulate_grad(table, gt, true);
  }
}

// Sums g over its broadcast axes down to `shape` (returns g itself when the shapes agree).
inline Tensor reduce_to(const Tensor& g, const Shape& shape) {
  if (g.shape() == shape) return g;
  Tensor out = Tensor::empty(shape, g.dtype(), g.device());
  be(g).sum_to(g, out, make_broadcast_plan(g.shape(), g.shape(), shape), false);
  return out;
}

}  // namespace sa::ops::detail
