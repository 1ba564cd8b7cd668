// The CRF against brute force: log Z and the gold score by enumerating every tag path, Viterbi's
// path equal to the best enumerated one; the loss ignores what lies past a sentence's length; CUDA
// decodes the same paths as the CPU. (The f64 gradient check is the crf_nll case of op_cases.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "engine/engine.h"
#include "tests/test_util.h"

namespace sa {
namespace {

struct Crf {
  int64_t B, T, K;
  Tensor em, tags, len, trans, start, end;
};

Crf random_crf(uint64_t seed, int64_t B, int64_t T, int64_t K) {
  std::mt19937_64 r(seed);
  std::uniform_real_distribution<double> u(-2, 2);
  auto rnd = [&](Shape s) {
    std::vector<double> v(static_cast<size_t>(numel(s)));
    for (double& x : v) x = u(r);
    return Tensor::of(v, s, DType::F64, Device::cpu());
  };
  std::vector<int32_t> tags(static_cast<size_t>(B * T)), len(static_cast<size_t>(B));
  for (auto& t : tags) t = static_cast<int32_t>(r() % K);
  for (auto& l : len) l = static_cast<int32_t>(1 + r() % T);
  return {B, T, K, rnd({B, T, K}), Tensor::from(tags, {B, T}), Tensor::from(len, {B}), rnd({K, K}), rnd({K}), rnd({K})};
}

// Every path of sentence b: log of the summed exp scores, the best path, and the gold score.
struct Brute {
  double log_z = -INFINITY, best = -INFINITY, gold = 0;
  std::vector<int> best_path;
};

Brute brute(const Crf& c, int64_t b) {
  const std::vector<double> em = c.em.values(), tr = c.trans.values(), st = c.start.values(), en = c.end.values();
  const std::vector<double> tags = c.tags.values();
  const int L = static_cast<int>(c.len.values()[b]);
  const int K = static_cast<int>(c.K);
  auto score = [&](const std::vector<int>& p) {
    double s = st[p[0]] + en[p[L - 1]];
    for (int t = 0; t < L; ++t) s += em[(b * c.T + t) * K + p[t]];
    for (int t = 1; t < L; ++t) s += tr[p[t - 1] * K + p[t]];
    return s;
  };
  Brute out;
  std::vector<int> p(static_cast<size_t>(L), 0);
  double sum = 0;
  std::vector<double> all;
  while (true) {
    const double s = score(p);
    all.push_back(s);
    if (s > out.best) out.best = s, out.best_path = p;
    int i = L - 1;
    while (i >= 0 && ++p[i] == K) p[i--] = 0;
    if (i < 0) break;
  }
  const double m = *std::max_element(all.begin(), all.end());
  for (double s : all) sum += std::exp(s - m);
  out.log_z = m + std::log(sum);
  std::vector<int> g(static_cast<size_t>(L));
  for (int t = 0; t < L; ++t) g[t] = static_cast<int>(tags[b * c.T + t]);
  out.gold = score(g);
  return out;
}

TEST(Crf, LossAndViterbiEqualBruteForce) {
  for (uint64_t seed : {1, 2, 3}) {
    const Crf c = random_crf(seed, 4, 5, 3 + static_cast<int64_t>(seed % 2));
    const std::vector<double> loss = ops::crf_nll(c.em, c.tags, c.len, c.trans, c.start, c.end).values();
    const std::vector<double> path = ops::crf_viterbi(c.em, c.len, c.trans, c.start, c.end).values();
    const std::vector<double> len = c.len.values();
    for (int64_t b = 0; b < c.B; ++b) {
      const Brute want = brute(c, b);
      EXPECT_NEAR(loss[b], want.log_z - want.gold, 1e-10) << "sentence " << b;
      for (int t = 0; t < c.T; ++t)
        EXPECT_EQ(path[b * c.T + t], t < len[b] ? want.best_path[t] : 0) << "sentence " << b << " position " << t;
    }
  }
}

TEST(Crf, PaddingAndItsTagsDoNotMatter) {
  Crf c = random_crf(9, 3, 6, 4);
  const std::vector<double> a = ops::crf_nll(c.em, c.tags, c.len, c.trans, c.start, c.end).values();
  std::vector<double> em = c.em.values(), len = c.len.values();
  std::vector<int32_t> tags(static_cast<size_t>(c.B * c.T));
  const std::vector<double> tv = c.tags.values();
  for (int64_t b = 0; b < c.B; ++b)
    for (int64_t t = 0; t < c.T; ++t) {
      tags[b * c.T + t] = static_cast<int32_t>(t < len[b] ? tv[b * c.T + t] : 0);
      if (t >= len[b])
        for (int64_t k = 0; k < c.K; ++k) em[(b * c.T + t) * c.K + k] = 100.0;  // junk past the end
    }
  const std::vector<double> b2 = ops::crf_nll(Tensor::of(em, c.em.shape(), DType::F64, Device::cpu()),
                                              Tensor::from(tags, {c.B, c.T}), c.len, c.trans, c.start, c.end)
                                     .values();
  for (size_t i = 0; i < a.size(); ++i) EXPECT_DOUBLE_EQ(a[i], b2[i]);
  // A tag out of range is an error that says where.
  std::vector<int32_t> bad = tags;
  bad[0] = static_cast<int32_t>(c.K);
  EXPECT_NE(testing::error_of([&] { ops::crf_nll(c.em, Tensor::from(bad, {c.B, c.T}), c.len, c.trans, c.start, c.end); })
                .find("sentence 0, position 0"),
            std::string::npos);
}

TEST(Crf, CudaDecodesTheSamePaths) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no GPU present: CUDA-vs-CPU comparison skipped";
  const Crf c = random_crf(4, 16, 12, 9);
  const Device g = Device::cuda(0);
  auto on = [&](const Tensor& t) { return t.dtype() == DType::I32 ? t.to(g) : t.to(DType::F32).to(g); };
  const std::vector<double> cpu = ops::crf_viterbi(c.em.to(DType::F32), c.len, c.trans.to(DType::F32),
                                                   c.start.to(DType::F32), c.end.to(DType::F32))
                                      .values();
  const std::vector<double> gpu = ops::crf_viterbi(on(c.em), on(c.len), on(c.trans), on(c.start), on(c.end)).to(Device::cpu()).values();
  EXPECT_EQ(cpu, gpu);
}

}  // namespace
}  // namespace sa
