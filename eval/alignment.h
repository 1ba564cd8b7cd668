// Linear alignment of embedding spaces (docs/design.md §4.4) and bilingual lexicon
// induction (MUSE protocol): a map W with X W ~ Y fitted on anchor pairs, by least squares (the
// paper's Eq. 8, default) or orthogonal Procrustes; retrieval by nearest neighbour or CSLS.
// Matrices are row-major f64 [rows, cols]: one row per word.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/engine.h"

namespace sa {

struct Matrix {
  int64_t rows = 0, cols = 0;
  std::vector<double> v;
  Matrix() = default;
  Matrix(int64_t r, int64_t c) : rows(r), cols(c), v(static_cast<size_t>(r * c), 0.0) {}
  double& operator()(int64_t r, int64_t c) { return v[static_cast<size_t>(r * cols + c)]; }
  double operator()(int64_t r, int64_t c) const { return v[static_cast<size_t>(r * cols + c)]; }
};

Matrix matmul(const Matrix& a, const Matrix& b);
// W [dx, dy] minimizing ||X W - Y||_F (LAPACK dgels, QR); X [n, dx] with n >= dx, Y [n, dy].
Matrix least_squares_map(const Matrix& X, const Matrix& Y);
// W [d, d] orthogonal minimizing ||X W - Y||_F: W = U V^T where U S V^T = svd(X^T Y) (LAPACK dgesdd).
Matrix procrustes_map(const Matrix& X, const Matrix& Y);
// A map as text: "rows cols", then one row per line; read errors name the file.
void write_map(const Matrix& W, const std::string& path);
Matrix read_map(const std::string& path);
// Rows scaled to unit length (zero rows stay zero), for cosine retrieval.
Tensor unit_rows(const Tensor& m);
Matrix normalized_rows(const Matrix& m);

// CSLS(x, y) = 2 cos(x, y) - r_T(x) - r_S(y), r = mean cosine of the k nearest neighbours in the
// other space (Conneau et al. 2018). Both inputs are unit rows.
struct Retrieval {
  bool csls = false;
  int k = 10;
};
// For each query row of `src` (unit), the `top` best rows of `tgt` (unit), best first.
std::vector<std::vector<int>> retrieve(const Matrix& src, const Matrix& tgt, const std::vector<int>& queries, int top,
                                       const Retrieval& r);

struct BliScore {
  double p_at_1 = 0, p_at_5 = 0;
  size_t queries = 0;
};
// gold[i]: the target rows that translate query src row queries[i] (any of them counts).
BliScore bli_precision(const Matrix& src, const Matrix& tgt, const std::vector<int>& queries,
                       const std::vector<std::vector<int>>& gold, const Retrieval& r);

}  // namespace sa
