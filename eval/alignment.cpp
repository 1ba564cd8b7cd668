#include "eval/alignment.h"

#include "data/input_limits.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <cmath>
#include <numeric>
#include <sstream>

#include "data/atomic_file.h"
#include "engine/cpu/lapack.h"
#include "engine/engine.h"

namespace sa {

namespace {

Tensor as_tensor(const Matrix& m) { return Tensor::from(m.v, {m.rows, m.cols}); }

Matrix from_tensor(const Tensor& t) {
  Matrix m(t.dim(0), t.dim(1));
  m.v = t.values();
  return m;
}

// Column-major copy for LAPACK.
std::vector<double> column_major(const Matrix& m) {
  std::vector<double> c(m.v.size());
  for (int64_t r = 0; r < m.rows; ++r)
    for (int64_t k = 0; k < m.cols; ++k) c[static_cast<size_t>(k * m.rows + r)] = m(r, k);
  return c;
}

}  // namespace

Matrix matmul(const Matrix& a, const Matrix& b) {
  SA_CHECK(a.cols == b.rows, "matmul: [{}, {}] x [{}, {}]", a.rows, a.cols, b.rows, b.cols);
  NoGrad ng;
  return from_tensor(ops::matmul(as_tensor(a), as_tensor(b)));
}

Matrix least_squares_map(const Matrix& X, const Matrix& Y) {
  SA_CHECK(X.rows == Y.rows && X.rows >= X.cols && X.cols > 0,
           "least squares: {} anchor pairs for {} dimensions (need at least as many pairs as dimensions)", X.rows,
           X.cols);
  int m = static_cast<int>(X.rows), n = static_cast<int>(X.cols), nrhs = static_cast<int>(Y.cols), info = 0;
  std::vector<double> a = column_major(X), b = column_major(Y);
  int lwork = -1;
  double wq = 0;
  dgels_("N", &m, &n, &nrhs, a.data(), &m, b.data(), &m, &wq, &lwork, &info);
  lwork = static_cast<int>(wq);
  std::vector<double> work(static_cast<size_t>(std::max(lwork, 1)));
  dgels_("N", &m, &n, &nrhs, a.data(), &m, b.data(), &m, work.data(), &lwork, &info);
  SA_CHECK(info == 0, "least squares: LAPACK dgels failed (info {}; the anchors may be rank-deficient)", info);
  Matrix W(n, nrhs);
  for (int r = 0; r < n; ++r)
    for (int c = 0; c < nrhs; ++c) W(r, c) = b[static_cast<size_t>(c) * m + r];
  return W;
}

Matrix procrustes_map(const Matrix& X, const Matrix& Y) {
  SA_CHECK(X.rows == Y.rows && X.cols == Y.cols && X.rows > 0,
           "Procrustes: source [{}, {}] and target [{}, {}] must have the same shape", X.rows, X.cols, Y.rows, Y.cols);
  Matrix Xt(X.cols, X.rows);
  for (int64_t r = 0; r < X.rows; ++r)
    for (int64_t c = 0; c < X.cols; ++c) Xt(c, r) = X(r, c);
  const Matrix M = matmul(Xt, Y);  // [d, d]
  int d = static_cast<int>(M.rows), info = 0, lwork = -1;
  std::vector<double> a = column_major(M), s(static_cast<size_t>(d)), u(static_cast<size_t>(d) * d),
                      vt(static_cast<size_t>(d) * d);
  std::vector<int> iwork(static_cast<size_t>(8 * d));
  double wq = 0;
  dgesdd_("A", &d, &d, a.data(), &d, s.data(), u.data(), &d, vt.data(), &d, &wq, &lwork, iwork.data(), &info);
  lwork = static_cast<int>(wq);
  std::vector<double> work(static_cast<size_t>(std::max(lwork, 1)));
  dgesdd_("A", &d, &d, a.data(), &d, s.data(), u.data(), &d, vt.data(), &d, work.data(), &lwork, iwork.data(), &info);
  SA_CHECK(info == 0, "Procrustes: LAPACK dgesdd failed (info {})", info);
  Matrix W(d, d);  // U V^T; u and vt are column-major
  for (int r = 0; r < d; ++r)
    for (int c = 0; c < d; ++c) {
      double acc = 0;
      for (int k = 0; k < d; ++k) acc += u[static_cast<size_t>(k) * d + r] * vt[static_cast<size_t>(c) * d + k];
      W(r, c) = acc;
    }
  return W;
}

void write_map(const Matrix& W, const std::string& path) {
  std::ostringstream f;
  f << W.rows << " " << W.cols << "\n";
  char buf[32];
  for (int64_t r = 0; r < W.rows; ++r) {
    for (int64_t c = 0; c < W.cols; ++c) std::snprintf(buf, sizeof buf, "%s%.17g", c ? " " : "", W(r, c)), f << buf;
    f << "\n";
  }
  write_file_atomically(path, f.str());
}

Matrix read_map(const std::string& path) {
  std::ifstream f(path);
  SA_CHECK(f, "{}: cannot open map", path);
  std::string line;
  int64_t r = 0, c = 0;
  SA_CHECK(std::getline(f, line) && (std::istringstream(line) >> r >> c) && r > 0 && c > 0,
           "{}:1: expected \"rows cols\"", path);
  check_stated_size(path, {r, c}, 2, "header \"rows cols\"");
  Matrix W(r, c);
  // One row per line, as write_map writes them; the header must agree with the rows.
  for (int64_t i = 0; i < r; ++i) {
    SA_CHECK(std::getline(f, line), "{}: the header announces {} rows, the file ends after {}", path, r, i);
    std::istringstream ss(line);
    int64_t k = 0;
    for (double x; ss >> x; ++k)
      if (k < c) W(i, k) = x;
    SA_CHECK(ss.eof() && k == c, "{}:{}: expected {} numbers (the header's cols), found {}{}", path, i + 2, c, k,
             ss.eof() ? "" : " and then something else");
  }
  int64_t rows = r;
  for (std::string rest; std::getline(f, rest);) rows += rest.find_first_not_of(" \t\r") != std::string::npos;
  SA_CHECK(rows == r, "{}:{}: the header announces {} rows, the file has {}", path, r + 2, r, rows);
  return W;
}

Tensor unit_rows(const Tensor& m) {
  NoGrad ng;
  return ops::div(m, ops::add_scalar(ops::sqrt(ops::sum(ops::square(m), 1, true)), 1e-12));
}

Matrix normalized_rows(const Matrix& m) { return from_tensor(unit_rows(as_tensor(m))); }

namespace {

// Mean cosine of each row of `a` with its k nearest rows of `b`.
std::vector<double> mean_top_k(const Matrix& a, const Matrix& b, int k) {
  NoGrad ng;
  std::vector<double> out(static_cast<size_t>(a.rows));
  const int64_t chunk = 512;
  Tensor bt = ops::transpose(as_tensor(b), 0, 1).clone();
  for (int64_t r0 = 0; r0 < a.rows; r0 += chunk) {
    const int64_t r1 = std::min(a.rows, r0 + chunk);
    Matrix part(r1 - r0, a.cols);
    std::copy(a.v.begin() + r0 * a.cols, a.v.begin() + r1 * a.cols, part.v.begin());
    std::vector<double> sims = ops::matmul(as_tensor(part), bt).values();
    const int kk = static_cast<int>(std::min<int64_t>(k, b.rows));
    for (int64_t r = r0; r < r1; ++r) {
      auto row = sims.begin() + (r - r0) * b.rows;
      std::partial_sort(row, row + kk, row + b.rows, std::greater<>());
      out[static_cast<size_t>(r)] = std::accumulate(row, row + kk, 0.0) / kk;
    }
  }
  return out;
}

}  // namespace

std::vector<std::vector<int>> retrieve(const Matrix& src, const Matrix& tgt, const std::vector<int>& queries, int top,
                                       const Retrieval& r) {
  SA_CHECK(src.cols == tgt.cols, "retrieval: source dimension {} differs from the target's {}", src.cols, tgt.cols);
  Matrix q(static_cast<int64_t>(queries.size()), src.cols);
  for (size_t i = 0; i < queries.size(); ++i)
    std::copy(src.v.begin() + queries[i] * src.cols, src.v.begin() + (queries[i] + 1) * src.cols,
              q.v.begin() + static_cast<int64_t>(i) * src.cols);
  std::vector<double> r_src, r_tgt;
  if (r.csls) {
    r_src = mean_top_k(q, tgt, r.k);    // r_T(x): a query's neighbourhood among the targets
    r_tgt = mean_top_k(tgt, src, r.k);  // r_S(y): a target's neighbourhood among all sources
  }
  NoGrad ng;
  std::vector<double> sims = ops::matmul(as_tensor(q), ops::transpose(as_tensor(tgt), 0, 1).clone()).values();
  std::vector<std::vector<int>> out(queries.size());
  std::vector<int> idx(static_cast<size_t>(tgt.rows));
  for (size_t i = 0; i < queries.size(); ++i) {
    double* row = &sims[i * static_cast<size_t>(tgt.rows)];
    if (r.csls)
      for (int64_t t = 0; t < tgt.rows; ++t) row[t] = 2 * row[t] - r_src[i] - r_tgt[static_cast<size_t>(t)];
    std::iota(idx.begin(), idx.end(), 0);
    const int kk = static_cast<int>(std::min<int64_t>(top, tgt.rows));
    std::partial_sort(idx.begin(), idx.begin() + kk, idx.end(), [&](int a, int b) { return row[a] > row[b] || (row[a] == row[b] && a < b); });
    out[i].assign(idx.begin(), idx.begin() + kk);
  }
  return out;
}

BliScore bli_precision(const Matrix& src, const Matrix& tgt, const std::vector<int>& queries,
                       const std::vector<std::vector<int>>& gold, const Retrieval& r) {
  SA_CHECK(queries.size() == gold.size(), "BLI: {} queries with {} gold lists", queries.size(), gold.size());
  BliScore s;
  s.queries = queries.size();
  if (queries.empty()) return s;
  auto found = retrieve(src, tgt, queries, 5, r);
  for (size_t i = 0; i < queries.size(); ++i) {
    auto hit = [&](size_t upto) {
      for (size_t j = 0; j < std::min(upto, found[i].size()); ++j)
        if (std::find(gold[i].begin(), gold[i].end(), found[i][j]) != gold[i].end()) return true;
      return false;
    };
    s.p_at_1 += hit(1), s.p_at_5 += hit(5);
  }
  s.p_at_1 /= static_cast<double>(queries.size());
  s.p_at_5 /= static_cast<double>(queries.size());
  return s;
}

}  // namespace sa
