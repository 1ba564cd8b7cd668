// The XNLI task's pair classifier and data.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>
#include <sstream>

#include "eval/fit_classifier.h"
#include "eval/sentiment_task.h"
#include "eval/nli_task.h"
#include "layers/nli_classifier.h"
#include "tests/test_util.h"

namespace sa {
namespace {

// The pair model learns a relation between its two inputs: the hypothesis' tokens are the
// premise's (entailment), their negation (contradiction) or unrelated (neutral).
TEST(NliClassifier, LearnsARelationBetweenPremiseAndHypothesis) {
  std::mt19937_64 rng(8);
  std::normal_distribution<double> g(0, 1);
  auto make = [&](int n, std::vector<double>& p, std::vector<double>& h, std::vector<int32_t>& y, Sentences& ps,
                  Sentences& hs) {
    for (int i = 0; i < n; ++i) {
      const int label = i % 3, len = 2 + static_cast<int>(rng() % 3);
      ps.emplace_back(static_cast<size_t>(len), "w");
      hs.emplace_back(static_cast<size_t>(len), "w");
      for (int t = 0; t < len; ++t)
        for (int d = 0; d < 4; ++d) {
          const double v = g(rng);
          p.push_back(v);
          h.push_back(label == 0 ? v : label == 2 ? -v : g(rng));
        }
      y.push_back(label);
    }
  };
  std::vector<double> tp, th, dp, dh;
  std::vector<int32_t> ty, dy;
  Sentences tps, ths, dps, dhs;
  make(240, tp, th, ty, tps, ths);
  make(90, dp, dh, dy, dps, dhs);
  const Tensor TP = Tensor::of(tp, {static_cast<int64_t>(tp.size() / 4), 4}),
               TH = Tensor::of(th, {static_cast<int64_t>(th.size() / 4), 4}),
               DP = Tensor::of(dp, {static_cast<int64_t>(dp.size() / 4), 4}),
               DH = Tensor::of(dh, {static_cast<int64_t>(dh.size() / 4), 4});
  const auto tpo = sentence_offsets(tps), tho = sentence_offsets(ths), dpo = sentence_offsets(dps),
             dho = sentence_offsets(dhs);
  NliClassifier c = NliClassifier::init(4, 8, 16, 0.1, 2, Device::cpu());
  auto logits = [&](const Tensor& P, const std::vector<int64_t>& po, const Tensor& H, const std::vector<int64_t>& ho,
                    const std::vector<size_t>& rows, bool train, Generator& gen) {
    const SentenceBatch p = padded_batch(P, po, rows, nullptr, Device::cpu()), h = padded_batch(H, ho, rows, nullptr, Device::cpu());
    return c.logits(p.x, p.lengths, h.x, h.lengths, train, gen);
  };
  std::vector<size_t> all_dev(90);
  std::iota(all_dev.begin(), all_dev.end(), 0);
  Generator unused(0);
  FitOptions fo;
  fo.lr = 0.01, fo.max_epochs = 40, fo.patience = 8, fo.seed = 4;
  FitResult r = fit_classifier(
      c.params(), 240,
      [&](const std::vector<int64_t>& rows, Generator& gen) {
        std::vector<int32_t> y;
        for (int64_t i : rows) y.push_back(ty[static_cast<size_t>(i)]);
        return ops::mean(ops::cross_entropy(logits(TP, tpo, TH, tho, std::vector<size_t>(rows.begin(), rows.end()), true, gen),
                                            Tensor::from(y, {static_cast<int64_t>(y.size())})));
      },
      [&] { return accuracy(logits(DP, dpo, DH, dho, all_dev, false, unused), dy); }, fo);
  EXPECT_GT(r.best_dev, 0.8);
}

TEST(NliData, TokenizedPairsAndLeftOutOnes) {
  NliSet set;
  set.pairs = {{"A man plays.", "Someone is playing.", NliLabel::Entailment}, {"...", " ", NliLabel::Neutral},
               {"Dogs don't fly.", "Dogs fly.", NliLabel::Contradiction}};
  set.unlabeled = 4;
  const NliData d = prepare_nli(set);
  EXPECT_EQ(d.labels, (std::vector<int32_t>{0, 2}));
  EXPECT_EQ(d.premises[1], (std::vector<std::string>{"Dogs", "don't", "fly", "."}));
  EXPECT_EQ(d.empty, 1);
  EXPECT_EQ(d.unlabeled, 4);
}

}  // namespace
}  // namespace sa
