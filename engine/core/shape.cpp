#include "engine/core/shape.h"

#include "engine/core/error.h"

namespace sa {

int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

std::string to_string(const Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? "," : "") + std::to_string(s[i]);
  return r + "]";
}

Shape strides_of(const Shape& s) {
  Shape st(s.size());
  int64_t acc = 1;
  for (size_t i = s.size(); i-- > 0;) {
    st[i] = acc;
    acc *= s[i];
  }
  return st;
}

Shape broadcast_shapes(const char* op, const Shape& a, const Shape& b) {
  size_t r = std::max(a.size(), b.size());
  Shape out(r);
  for (size_t i = 0; i < r; ++i) {
    int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    SA_CHECK(da == db || da == 1 || db == 1, "{}: shapes {} and {} cannot be broadcast together", op,
             to_string(a), to_string(b));
    out[i] = da == 1 ? db : da;
  }
  return out;
}

int normalize_axis(const char* op, int axis, int rank) {
  int a = axis < 0 ? axis + rank : axis;
  SA_CHECK(a >= 0 && a < rank, "{}: axis {} is out of range for a tensor of rank {}", op, axis, rank);
  return a;
}

}  // namespace sa
