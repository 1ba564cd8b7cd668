// The strided block copy behind permute, slice, concat and split, and what both backends derive
// from it: a simpler plan for the same copy, each row's offsets, and (GPU) how wide an access its
// rows allow. Host and device.
#pragma once
#include <cstddef>
#include <cstdint>

#include "engine/core/philox.h"  // SA_HD

namespace sa {

// dst[dst_off + sum i_k*dst_stride_k] = src[src_off + sum i_k*src_stride_k] over every index of
// `shape`. Offsets and strides in elements; any dtype.
struct CopyPlan {
  static constexpr int kMaxRank = 6;
  int rank = 0;
  int64_t shape[kMaxRank] = {};
  int64_t src_stride[kMaxRank] = {};
  int64_t dst_stride[kMaxRank] = {};
  int64_t src_offset = 0;
  int64_t dst_offset = 0;
};

// The offsets of row `row` of the copy (a row: the innermost dim; its first element), rows in
// row-major order of the outer dims.
SA_HD void copy_row_offsets(const CopyPlan& p, int64_t row, int64_t* src, int64_t* dst) {
  int64_t so = p.src_offset, d = p.dst_offset;
  for (int k = p.rank - 2; k >= 0; --k) {
    const int64_t x = row % p.shape[k];
    row /= p.shape[k];
    so += x * p.src_stride[k];
    d += x * p.dst_stride[k];
  }
  *src = so, *dst = d;
}

// The same copy, element for element in the same order, with size-1 dims dropped and neighbours
// merged where both sides run contiguously across them: a slice of whole rows becomes one run, a
// permute keeps only the dims it really moves. Rank 1 at least.
CopyPlan collapse_copy_plan(const CopyPlan& p);

// How many elements a GPU thread may move as one 16-byte access: 16 / elem_size when each row
// (the innermost dim, contiguous on both sides) splits into whole 16-byte pieces that start
// 16-byte aligned at both pointers; 1 otherwise.
int copy_vector_width(const CopyPlan& p, size_t elem_size, const void* src, const void* dst);

}  // namespace sa
