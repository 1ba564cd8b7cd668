// Host-side dtype dispatch for backends: calls f(T{}) with T = float or double.
#pragma once
#include "engine/core/error.h"
#include "engine/core/dtype.h"

namespace sa {

template <typename F>
void dispatch_float(DType t, const char* op, F&& f) {
  switch (t) {
    case DType::F32: f(float{}); break;
    case DType::F64: f(double{}); break;
    default: fail("{}: dtype {} is not supported here (f32 or f64 expected)", op, dtype_name(t));
  }
}

}  // namespace sa
