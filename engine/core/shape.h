// Shapes are plain vectors of extents; tensors are contiguous and row-major, so strides follow.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace sa {

using Shape = std::vector<int64_t>;

int64_t numel(const Shape& s);
std::string to_string(const Shape& s);
// Row-major strides in elements.
Shape strides_of(const Shape& s);
// Numpy broadcasting of two shapes; fails naming `op` when they are incompatible.
Shape broadcast_shapes(const char* op, const Shape& a, const Shape& b);
// Resolves a possibly negative axis against rank; fails naming `op` when out of range.
int normalize_axis(const char* op, int axis, int rank);

}  // namespace sa
