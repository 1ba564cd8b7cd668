// Alignment maps (least squares, Procrustes) against known solutions, and BLI retrieval with
// nearest neighbour and CSLS.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "eval/alignment.h"
#include "tests/test_util.h"

namespace sa {
namespace {

Matrix random_matrix(int64_t r, int64_t c, std::mt19937_64& rng) {
  Matrix m(r, c);
  std::normal_distribution<double> n(0, 1);
  for (double& v : m.v) v = n(rng);
  return m;
}

// An orthogonal matrix: a product of plane rotations.
Matrix rotation(int d, std::mt19937_64& rng) {
  Matrix q(d, d);
  for (int i = 0; i < d; ++i) q(i, i) = 1;
  std::uniform_real_distribution<double> u(-M_PI, M_PI);
  for (int i = 0; i < d; ++i)
    for (int j = i + 1; j < d; ++j) {
      Matrix g(d, d);
      for (int k = 0; k < d; ++k) g(k, k) = 1;
      const double a = u(rng);
      g(i, i) = g(j, j) = std::cos(a), g(i, j) = -std::sin(a), g(j, i) = std::sin(a);
      q = matmul(q, g);
    }
  return q;
}

TEST(Alignment, LeastSquaresRecoversAndIsOptimal) {
  std::mt19937_64 rng(1);
  Matrix X = random_matrix(40, 5, rng), W = random_matrix(5, 3, rng);
  Matrix fit = least_squares_map(X, matmul(X, W));
  for (size_t i = 0; i < W.v.size(); ++i) EXPECT_NEAR(fit.v[i], W.v[i], 1e-10);
  // With noise: the residual is orthogonal to the columns of X (the normal equations).
  Matrix Y = matmul(X, W), noise = random_matrix(40, 3, rng);
  for (size_t i = 0; i < Y.v.size(); ++i) Y.v[i] += 0.1 * noise.v[i];
  fit = least_squares_map(X, Y);
  Matrix R = matmul(X, fit);
  for (size_t i = 0; i < R.v.size(); ++i) R.v[i] -= Y.v[i];
  for (int a = 0; a < 5; ++a)
    for (int c = 0; c < 3; ++c) {
      double dot = 0;
      for (int n = 0; n < 40; ++n) dot += X(n, a) * R(n, c);
      EXPECT_NEAR(dot, 0, 1e-10);
    }
  EXPECT_NE(testing::error_of([&] { least_squares_map(random_matrix(3, 5, rng), random_matrix(3, 5, rng)); })
                .find("at least as many pairs"),
            std::string::npos);
}

TEST(Alignment, ProcrustesRecoversARotation) {
  std::mt19937_64 rng(2);
  const int d = 6;
  Matrix X = random_matrix(30, d, rng), Q = rotation(d, rng);
  Matrix W = procrustes_map(X, matmul(X, Q));
  for (size_t i = 0; i < Q.v.size(); ++i) EXPECT_NEAR(W.v[i], Q.v[i], 1e-10);
  // With noise the map stays orthogonal (W^T W = I)...
  Matrix Y = matmul(X, Q), noise = random_matrix(30, d, rng);
  for (size_t i = 0; i < Y.v.size(); ++i) Y.v[i] += 0.3 * noise.v[i];
  W = procrustes_map(X, Y);
  for (int a = 0; a < d; ++a)
    for (int b = 0; b < d; ++b) {
      double dot = 0;
      for (int k = 0; k < d; ++k) dot += W(k, a) * W(k, b);
      EXPECT_NEAR(dot, a == b ? 1.0 : 0.0, 1e-10);
    }
  // ...and fits at least as well as the true rotation, and better than a perturbed one.
  auto err = [&](const Matrix& M) {
    Matrix P = matmul(X, M);
    double e = 0;
    for (size_t i = 0; i < P.v.size(); ++i) e += (P.v[i] - Y.v[i]) * (P.v[i] - Y.v[i]);
    return e;
  };
  EXPECT_LE(err(W), err(Q) + 1e-9);
  EXPECT_LT(err(W), err(matmul(W, rotation(d, rng))));
}

TEST(Alignment, BliWithProcrustesAndCslsAgainstAHub) {
  std::mt19937_64 rng(3);
  // 30 words: targets are the sources rotated; fit on the first 20 pairs, test on the last 10.
  Matrix src = normalized_rows(random_matrix(30, 8, rng)), Q = rotation(8, rng);
  Matrix tgt = matmul(src, Q);
  Matrix xs(20, 8), ys(20, 8);
  std::copy(src.v.begin(), src.v.begin() + 160, xs.v.begin());
  std::copy(tgt.v.begin(), tgt.v.begin() + 160, ys.v.begin());
  Matrix mapped = normalized_rows(matmul(src, procrustes_map(xs, ys)));
  std::vector<int> q;
  std::vector<std::vector<int>> gold;
  for (int i = 20; i < 30; ++i) q.push_back(i), gold.push_back({i});
  for (bool csls : {false, true}) {
    BliScore s = bli_precision(mapped, tgt, q, gold, {csls, 3});
    EXPECT_DOUBLE_EQ(s.p_at_1, 1.0);
    EXPECT_EQ(s.queries, 10u);
  }
  // A hub: target h at 0 degrees sits between queries at +-9 degrees whose translations are at
  // +-20 degrees. Nearest neighbour picks the hub; CSLS (k = 1) discounts it, since a source (at
  // 0 degrees) lies right on it.
  auto unit = [](double deg) { return std::vector<double>{std::cos(deg * M_PI / 180), std::sin(deg * M_PI / 180)}; };
  Matrix S(3, 2), T(3, 2);
  const double sd[] = {9, -9, 0}, td[] = {20, -20, 0};
  for (int i = 0; i < 3; ++i) {
    auto a = unit(sd[i]), b = unit(td[i]);
    S(i, 0) = a[0], S(i, 1) = a[1], T(i, 0) = b[0], T(i, 1) = b[1];
  }
  BliScore nn = bli_precision(S, T, {0, 1, 2}, {{0}, {1}, {2}}, {false, 1});
  BliScore cs = bli_precision(S, T, {0, 1, 2}, {{0}, {1}, {2}}, {true, 1});
  EXPECT_NEAR(nn.p_at_1, 1.0 / 3, 1e-12);
  EXPECT_DOUBLE_EQ(cs.p_at_1, 1.0);
  EXPECT_DOUBLE_EQ(nn.p_at_5, 1.0);
}

}  // namespace
}  // namespace sa
