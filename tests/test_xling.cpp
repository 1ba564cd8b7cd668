// xling_eval's pieces: the layer choice, the feature cache, the sentiment data preparation, the
// classifier fit (best-dev restore, early stopping), and the sent task end to end on the bilm-tf
// fixture model.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <cmath>
#include <random>

#include "eval/sentiment_task.h"
#include "eval/xling_features.h"
#include "layers/dense_classifier.h"
#include "tests/test_util.h"
#include "train/fit_classifier.h"

namespace sa {
namespace {

TEST(XlingFeatures, LayerChoices) {
  // e [3 layers, 2 tokens, 2 dims], value = 100 * layer + 10 * token + dim
  std::vector<double> v;
  for (int l = 0; l < 3; ++l)
    for (int t = 0; t < 2; ++t)
      for (int d = 0; d < 2; ++d) v.push_back(100 * l + 10 * t + d);
  const Tensor e = Tensor::of(v, {3, 2, 2}, DType::F64);
  EXPECT_EQ(select_layers(e, parse_layer_spec("concat", 3)).values(),
            (std::vector<double>{0, 1, 100, 101, 200, 201, 10, 11, 110, 111, 210, 211}));
  EXPECT_EQ(select_layers(e, parse_layer_spec("average", 3)).values(), (std::vector<double>{100, 101, 110, 111}));
  EXPECT_EQ(select_layers(e, parse_layer_spec("top", 3)).values(), (std::vector<double>{200, 201, 210, 211}));
  EXPECT_EQ(select_layers(e, parse_layer_spec("1", 3)).values(), (std::vector<double>{100, 101, 110, 111}));
  EXPECT_EQ(feature_dim(parse_layer_spec("concat", 3), 3, 2), 6);
  for (const char* bad : {"3", "-1", "first", "", "1x"})
    EXPECT_THROW(parse_layer_spec(bad, 3), Error) << bad;
}

TEST(XlingFeatures, CacheComputesOnceThenReads) {
  const std::string dir = ::testing::TempDir() + "/xling_cache";
  std::filesystem::remove_all(dir);
  int computed = 0;
  auto compute = [&] {
    ++computed;
    return Tensor::of({1, 2, 3, 4, 5, 6}, {2, 3});
  };
  const Tensor a = cached_tensor(dir, 42, "test", Device::cpu(), compute);
  const Tensor b = cached_tensor(dir, 42, "test", Device::cpu(), compute);
  const Tensor c = cached_tensor(dir, 43, "test", Device::cpu(), compute);
  EXPECT_EQ(computed, 2);  // key 42 once, key 43 once
  EXPECT_EQ(a.values(), b.values());
  EXPECT_EQ(b.shape(), (Shape{2, 3}));
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir), std::filesystem::directory_iterator()), 2);
  cached_tensor("", 42, "test", Device::cpu(), compute);  // no directory: no cache
  EXPECT_EQ(computed, 3);
}

TEST(SentimentData, LabelsTruncationAndNeutralReviews) {
  ReviewSet set;
  set.reviews = {{"a", "Great phone. Works well!", 5}, {"b", "Meh.", 3}, {"c", "Broke after a day. Bad.", 1},
                 {"d", "   ", 4}, {"e", "One two three four five six seven.", 2}};
  SentimentData d = prepare_sentiment(set, 5, true);
  ASSERT_EQ(d.labels, (std::vector<int32_t>{1, 0, 0}));
  EXPECT_EQ(d.neutral, 1);
  EXPECT_EQ(d.empty, 1);
  EXPECT_EQ(d.reviews[0], (Sentences{{"great", "phone", "."}, {"works", "well"}}));  // cut at 5 tokens
  EXPECT_EQ(d.reviews[1], (Sentences{{"broke", "after", "a", "day", "."}}));       // its second sentence dropped
  EXPECT_EQ(d.reviews[2], (Sentences{{"one", "two", "three", "four", "five"}}));
  EXPECT_EQ(d.truncated, 3);
  EXPECT_THROW(prepare_sentiment(set, 0, false), Error);
}

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

}  // namespace
}  // namespace sa

namespace sa {
namespace {

const std::string kFixture = "../shared/data/fixtures/bilm-tf";

// Reviews whose sentiment words are chosen per label among fillers (a constructed MARC file).
std::string reviews_csv(int n, bool header, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const std::vector<std::string> pos = {"excellent", "wonderful", "great", "perfect"},
                                 neg = {"terrible", "awful", "broken", "useless"},
                                 fill = {"the", "it", "this", "product", "was", "very"};
  std::string s = header ? "id,text,stars\n" : "";
  for (int i = 0; i < n; ++i) {
    const bool good = i % 2;
    std::string text;
    for (int k = 0; k < 6; ++k) text += (k % 2 ? (good ? pos : neg)[rng() % 4] : fill[rng() % 6]) + " ";
    s += std::to_string(i) + ",\"" + text + ".\"," + (good ? "5" : "1") + "\n";
  }
  return s + "99,\"fine, I guess.\",3\n";  // a 3-star review, left out
}

// The sent task end to end on the bilm-tf fixture: the report holds every run and their mean and
// sample std; a second invocation reads the cached vectors and reproduces the numbers exactly.
TEST(XlingEval, SentEndToEndOnTheBilmTfFixture) {
  if (!std::filesystem::exists(kFixture + "/lm_weights.hdf5")) GTEST_SKIP() << "no ../shared/data fixture here";
  const std::string dir = ::testing::TempDir() + "/xling_sent";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string train = testing::temp_file("xling_sent/train.csv", reviews_csv(120, true, 1));
  const std::string test = testing::temp_file("xling_sent/test.csv", reviews_csv(40, false, 2));
  const std::string cmd = "./bin/xling_eval sent --device cpu --options " + kFixture + "/options.json --weights " +
                          kFixture + "/lm_weights.hdf5 --train " + train + " --test en=" + test + " --test xx=" + test +
                          " --runs 2 --lr 0.01 --max-epochs 15 --cache " + dir + "/cache --out ";
  const testing::ToolRun first = testing::run_tool(cmd + dir + "/a.json");
  ASSERT_EQ(first.rc, 0) << first.out;
  EXPECT_TRUE(testing::contains(first.out, "1 with 3 stars")) << first.out;
  const testing::ToolRun second = testing::run_tool(cmd + dir + "/b.json");
  ASSERT_EQ(second.rc, 0) << second.out;
  EXPECT_TRUE(testing::contains(second.out, "cached in")) << second.out;
  const nlohmann::json a = nlohmann::json::parse(std::ifstream(dir + "/a.json")),
                       b = nlohmann::json::parse(std::ifstream(dir + "/b.json"));
  ASSERT_EQ(a["runs"].size(), 2u);
  EXPECT_EQ(a["runs"], b["runs"]);
  EXPECT_EQ(a["settings"]["train_reviews"].get<int>() + a["settings"]["dev_reviews"].get<int>(), 120);
  for (const char* lang : {"en", "xx"}) {
    const double r0 = a["runs"][0]["test"][lang], r1 = a["runs"][1]["test"][lang];
    EXPECT_NEAR(a["test"][lang]["mean"].get<double>(), (r0 + r1) / 2, 1e-12);
    EXPECT_NEAR(a["test"][lang]["std"].get<double>(), std::abs(r0 - r1) / std::sqrt(2.0), 1e-12);
    EXPECT_EQ(a["test"][lang]["reviews"].get<int>(), 40);
  }
  EXPECT_EQ(a["test"]["en"]["mean"], a["test"]["xx"]["mean"]);  // the same file under two names
}

TEST(XlingEval, SentBadArgumentsSayWhatIsExpected) {
  if (!std::filesystem::exists(kFixture + "/lm_weights.hdf5")) GTEST_SKIP() << "no ../shared/data fixture here";
  const std::string train = testing::temp_file("xling_bad_train.csv", reviews_csv(20, true, 3));
  const std::string base = "./bin/xling_eval sent --device cpu --cache '' --options " + kFixture +
                           "/options.json --weights " + kFixture + "/lm_weights.hdf5 --train " + train;
  testing::ToolRun r = testing::run_tool(base + " --test " + train);
  EXPECT_NE(r.rc, 0);
  EXPECT_TRUE(testing::contains(r.out, "expected LANG=FILE")) << r.out;
  r = testing::run_tool(base + " --test en=" + train + " --layers 7");
  EXPECT_NE(r.rc, 0);
  EXPECT_TRUE(testing::contains(r.out, "layer index 0..2")) << r.out;
  r = testing::run_tool(base + " --test en=/nonexistent.csv");
  EXPECT_NE(r.rc, 0);
  EXPECT_TRUE(testing::contains(r.out, "/nonexistent.csv")) << r.out;
}

}  // namespace
}  // namespace sa
