// The CPU's conv1d_max computes each distinct window once: a token's padded tail of identical rows
// as one window, a repeated token once. Its values and argmax must be those of every window of
// every sample: the earliest of equal windows, or one with its contents.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "engine/engine.h"

namespace sa {
namespace {

// Char-CNN-like input: rows of a table by id, each token's ids padded with `pad` to length L.
Tensor embedded(const std::vector<std::vector<int>>& tokens, const Tensor& table, int L, int pad) {
  std::vector<int32_t> ids;
  for (const auto& t : tokens)
    for (int i = 0; i < L; ++i) ids.push_back(i < static_cast<int>(t.size()) ? t[static_cast<size_t>(i)] : pad);
  const Tensor idx = Tensor::from(ids, {static_cast<int64_t>(ids.size())});
  return ops::gather_rows(table, idx).view({static_cast<int64_t>(tokens.size()), L, table.dim(1)});
}

TEST(Conv1dMax, DistinctWindowsGiveTheValuesAndArgmaxOfEveryWindow) {
  std::mt19937_64 rng(11);
  NoGrad ng;
  const int L = 14, pad = 0, Cin = 5, Cout = 7;
  // A full-length token, an all-padding one, the padding id inside a word, repeats, and a word
  // that ends in the padding row's id (its tail starts inside the word).
  const std::vector<std::vector<int>> tokens = {
      {1, 2, 3}, {4, 5, 6, 7, 8}, {1, 2, 3}, {}, {9, 0, 9}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 2, 3, 4, 5},
      {4, 5, 6, 7, 8}, {3, 0}, {2}, {1, 2, 3}, {0, 0, 7}, {}};
  for (DType dt : {DType::F64, DType::F32})
    for (int W : {1, 3, 6}) {
      SCOPED_TRACE(::testing::Message() << (dt == DType::F64 ? "f64" : "f32") << " width " << W);
      std::normal_distribution<double> g(0, 1);
      auto random = [&](Shape s) {
        std::vector<double> v(static_cast<size_t>(numel(s)));
        for (double& e : v) e = g(rng);
        return Tensor::of(v, s, dt);
      };
      const Tensor table = random({10, Cin}), w = random({W, Cin, Cout}), b = random({Cout});
      const Tensor x = embedded(tokens, table, L, pad);
      const int64_t N = x.dim(0), P = L - W + 1, K = W * Cin;
      Tensor y = Tensor::empty({N, Cout}, dt), arg = Tensor::empty({N, Cout}, DType::I32);
      backend(Device::cpu()).conv1d_max(x, w, b, y, arg);

      // Every window of every sample, in double precision (identical windows tie exactly): the
      // first maximum, as the op keeps it.
      const std::vector<double> xs = x.values(), ws = w.values(), bs = b.values(), ys = y.values(),
                                args = arg.values();
      for (int64_t n = 0; n < N; ++n)
        for (int64_t c = 0; c < Cout; ++c) {
          int64_t best = -1;
          double top = 0;
          for (int64_t p = 0; p < P; ++p) {
            double v = 0;
            for (int64_t k = 0; k < K; ++k)
              v += xs[static_cast<size_t>((n * L + p) * Cin + k)] * ws[static_cast<size_t>(k * Cout + c)];
            if (best < 0 || v > top) best = p, top = v;
          }
          const double want = top + bs[static_cast<size_t>(c)], tol = dt == DType::F32 ? 1e-5 : 1e-12;
          // The op's window, or one with the same contents: a BLAS may round equal windows it
          // computes as separate rows (a letter that repeats inside a word) differently.
          const int64_t got = static_cast<int64_t>(args[static_cast<size_t>(n * Cout + c)]);
          ASSERT_TRUE(got >= 0 && got < P) << "sample " << n << " filter " << c << ": window " << got;
          bool same = true;
          for (int64_t k = 0; k < K; ++k)
            same &= xs[static_cast<size_t>((n * L + got) * Cin + k)] == xs[static_cast<size_t>((n * L + best) * Cin + k)];
          EXPECT_TRUE(same) << "sample " << n << " filter " << c << ": window " << got << ", expected " << best;
          EXPECT_NEAR(ys[static_cast<size_t>(n * Cout + c)], want, tol * (1 + std::abs(want)))
              << "sample " << n << " filter " << c;
        }
    }
}

}  // namespace
}  // namespace sa
