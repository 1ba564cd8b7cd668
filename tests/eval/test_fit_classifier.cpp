// Fitting the downstream classifiers: best-dev restore, early stopping, Flair's annealed SGD.
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
#include "layers/dense_classifier.h"
#include "tests/test_util.h"

namespace sa {
namespace {

// Two Gaussian clusters: the classifier learns them, early stopping ends the run, and the
// parameters returned are those of the best dev epoch (their dev accuracy equals best_dev).
TEST(FitClassifier, LearnsSeparableDataAndKeepsTheBestDevEpoch) {
  std::mt19937_64 rng(4);
  std::normal_distribution<double> noise(0, 1);
  auto make = [&](int n, std::vector<int32_t>& y) {
    std::vector<double> v;
    for (int i = 0; i < n; ++i) {
      y.push_back(i % 2);
      for (int k = 0; k < 8; ++k) v.push_back(noise(rng) + (i % 2 ? 1.5 : -1.5) * (k < 2));
    }
    return Tensor::of(v, {n, 8});
  };
  std::vector<int32_t> ty, dy;
  const Tensor tx = make(200, ty), dx = make(100, dy);
  DenseClassifier clf = DenseClassifier::init(8, 16, 2, 0.5, 7, Device::cpu());
  Generator eval_gen(0);
  auto dev_acc = [&] { return accuracy(clf.logits(dx, false, eval_gen), dy); };
  FitOptions o;
  o.max_epochs = 40, o.patience = 4, o.lr = 0.01, o.seed = 3;
  FitResult r = fit_classifier(
      clf.params(), 200,
      [&](const std::vector<int64_t>& rows, Generator& gen) {
        std::vector<int32_t> idx(rows.begin(), rows.end()), y;
        for (int64_t i : rows) y.push_back(ty[static_cast<size_t>(i)]);
        const int64_t n = static_cast<int64_t>(idx.size());
        return ops::mean(ops::cross_entropy(clf.logits(ops::gather_rows(tx, Tensor::from(idx, {n})), true, gen),
                                            Tensor::from(y, {n})));
      },
      dev_acc, o);
  EXPECT_GT(r.best_dev, 0.9);
  EXPECT_LT(r.epochs, 40);                       // stopped early
  EXPECT_EQ(r.epochs - r.best_epoch, o.patience);  // stopped after `patience` epochs without a gain
  NoGrad ng;
  EXPECT_DOUBLE_EQ(dev_acc(), r.best_dev);       // the best epoch's parameters are back
}

// Flair's schedule: the SGD rate is halved after `patience` epochs without a dev gain and training
// stops once it falls below min_lr. The loss is the parameter itself (gradient 1, under the clip),
// so each epoch's step is the rate of that epoch.
TEST(FitClassifier, SgdHalvesTheRateWithoutAGainAndStopsBelowTheMinimum) {
  Tensor p = Tensor::of(std::vector<double>{0.0}, {1}, DType::F64);
  p.set_requires_grad(true);
  std::vector<double> after;  // p after each epoch
  FitOptions o;
  o.schedule = FitOptions::Schedule::SgdAnneal;
  o.lr = 0.1, o.min_lr = 0.02, o.patience = 1, o.max_epochs = 50, o.batch_size = 1;
  FitResult r = fit_classifier(
      {p}, 1, [&](const std::vector<int64_t>&, Generator&) { return ops::sum(p); },
      [&] {
        after.push_back(p.values()[0]);
        return after.size() == 2 ? 1.0 : 0.0;  // the only gain: epoch 2
      },
      o);
  // Rates 0.1 (epochs 1-3: epoch 2 gains, epoch 3 does not), 0.05, 0.025; then 0.0125 < 0.02 stops.
  ASSERT_EQ(after.size(), 5u);
  const double expected[] = {-0.1, -0.2, -0.3, -0.35, -0.375};
  for (size_t i = 0; i < after.size(); ++i) EXPECT_NEAR(after[i], expected[i], 1e-12) << "epoch " << i + 1;
  EXPECT_EQ(r.epochs, 5);
  EXPECT_EQ(r.best_epoch, 2);
  EXPECT_NEAR(p.values()[0], -0.2, 1e-12);  // the best epoch's value is back
}

}  // namespace
}  // namespace sa
