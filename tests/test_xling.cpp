// xling_eval's pieces: the layer choice, the feature cache, the sentiment data preparation, the
// classifier fit (best-dev restore, early stopping), and the sent task end to end on the bilm-tf
// fixture model.
#include <gtest/gtest.h>

#include "layers/bilstm.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <cmath>
#include <numeric>
#include <random>
#include <sstream>

#include "eval/ner_task.h"
#include "eval/nli_task.h"
#include "eval/precomputed_encoder.h"
#include "eval/sentiment_task.h"
#include "eval/xling_features.h"
#include "layers/dense_classifier.h"
#include "layers/load_encoder.h"
#include "layers/nli_classifier.h"
#include "tests/test_util.h"
#include "eval/fit_classifier.h"

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
  cached_tensor(dir, 42, "test", Device::cpu(), compute, 2);  // the rows expected: read
  EXPECT_EQ(computed, 3);
  cached_tensor(dir, 42, "test", Device::cpu(), compute, 5);  // other rows than cached: computed again
  EXPECT_EQ(computed, 4);
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
  // With a CJK lexicon, Chinese is cut into its words (a one-line CC-CEDICT: traditional, simplified).
  CjkLexicon lex;
  lex.add_cedict(testing::temp_file("mini.u8", "# comment\n中文 中文 [Zhong1 wen2] /Chinese/\n"));
  lex.finish();
  ReviewSet zh;
  zh.reviews = {{"z", "我爱中文。", 5}};
  EXPECT_EQ(prepare_sentiment(zh, 50, false, &lex).reviews[0], (Sentences{{"我", "爱", "中文", "。"}}));
  EXPECT_EQ(prepare_sentiment(zh, 50, false).reviews[0], (Sentences{{"我爱中文", "。"}}));  // no lexicon: one word
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
  // +Proj: --align maps only the named test language. A zero map leaves xx's classifier one
  // constant input, so it predicts one class for every review (the balanced test: 0.5), while
  // English and its numbers stay as they were.
  std::string zero = "32 32\n";
  for (int i = 0; i < 32; ++i) {
    for (int k = 0; k < 32; ++k) zero += k ? " 0" : "0";
    zero += "\n";
  }
  const std::string map = testing::temp_file("xling_sent/zero.txt", zero);
  const testing::ToolRun mapped = testing::run_tool(cmd + dir + "/c.json --align xx=" + map);
  ASSERT_EQ(mapped.rc, 0) << mapped.out;
  const nlohmann::json c = nlohmann::json::parse(std::ifstream(dir + "/c.json"));
  for (int run = 0; run < 2; ++run) {
    EXPECT_EQ(c["runs"][run]["test"]["xx"].get<double>(), 0.5);
    EXPECT_EQ(c["runs"][run]["test"]["en"], a["runs"][run]["test"]["en"]);
  }
  EXPECT_EQ(c["encoders"]["xx"]["align"], map);
  EXPECT_FALSE(c["encoders"]["en"].contains("align"));
  for (const std::string& bad : {" --align yy=" + map, " --test en=" + test}) {
    const testing::ToolRun r = testing::run_tool(cmd + dir + "/d.json" + bad);
    EXPECT_NE(r.rc, 0) << bad;
    EXPECT_TRUE(testing::contains(r.out, "no --test file") || testing::contains(r.out, "given twice")) << r.out;
  }
}

// xling_eval names a model as bin/embed does: a BERT directory with --pieces (which keys the cache
// too: mean and first pieces are different vectors), and bilm-tf files with a --vocab that is checked.
TEST(XlingEval, TakesTheModelsBinEmbedTakes) {
  const std::string bert = "tests/reference/bert_small";
  const std::string dir = ::testing::TempDir() + "/xling_models";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string train = testing::temp_file("xling_models/train.csv", reviews_csv(40, true, 5));
  const std::string cmd = "./bin/xling_eval sent --device cpu --train " + train + " --test en=" + train +
                          " --runs 1 --max-epochs 2 --cache " + dir + "/cache --out " + dir + "/r.json";
  const testing::ToolRun first = testing::run_tool(cmd + " --model " + bert + " --pieces first");
  ASSERT_EQ(first.rc, 0) << first.out;
  EXPECT_EQ(nlohmann::json::parse(std::ifstream(dir + "/r.json"))["encoders"]["en"]["model"], bert);
  const testing::ToolRun mean = testing::run_tool(cmd + " --model " + bert + " --pieces mean");
  ASSERT_EQ(mean.rc, 0) << mean.out;
  EXPECT_TRUE(testing::contains(mean.out, "embed " + train)) << mean.out;  // other vectors: embedded anew
  const testing::ToolRun again = testing::run_tool(cmd + " --model " + bert + " --pieces mean");
  ASSERT_EQ(again.rc, 0) << again.out;
  EXPECT_FALSE(testing::contains(again.out, "embed " + train)) << again.out;  // now from the cache
  EXPECT_TRUE(testing::contains(again.out, "cached in")) << again.out;
  if (!std::filesystem::exists(kFixture + "/lm_weights.hdf5")) GTEST_SKIP() << "no ../shared/data fixture here";
  const std::string bilm = cmd + " --options " + kFixture + "/options.json --weights " + kFixture + "/lm_weights.hdf5";
  const testing::ToolRun vocab = testing::run_tool(bilm + " --vocab " + kFixture + "/vocab_test.txt");
  EXPECT_EQ(vocab.rc, 0) << vocab.out;
  const testing::ToolRun missing = testing::run_tool(bilm + " --vocab " + dir + "/no-vocab.txt");
  EXPECT_NE(missing.rc, 0);
  EXPECT_TRUE(testing::contains(missing.out, "no-vocab.txt: cannot open vocabulary file")) << missing.out;
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

namespace sa {
namespace {

// A padded batch gives each sentence the emissions it gets alone: the backward LSTM reverses each
// row within its length, and padding never leaks into real positions.
// The packed LSTM (rows sorted by length, each step on the rows still running) gives the outputs
// and gradients of the masked step-by-step LSTM with an identity projection, in f64.
TEST(BiLstm, PackedLstmEqualsTheMaskedLstm) {
  std::mt19937_64 rng(3);
  const int64_t B = 4, T = 7, in = 5, H = 3;
  const std::vector<int> lengths = {3, 7, 1, 5};
  std::normal_distribution<double> n(0, 1);
  std::vector<double> xv(B * T * in), wv((in + H) * 4 * H), bv(4 * H), ev(H * H, 0.0);
  for (double& v : xv) v = n(rng);
  for (double& v : wv) v = 0.5 * n(rng);
  for (double& v : bv) v = 0.1 * n(rng);
  for (int64_t i = 0; i < H; ++i) ev[i * H + i] = 1.0;
  auto run = [&](bool packed) {
    Tensor x = Tensor::of(xv, {B, T, in}, DType::F64).set_requires_grad();
    LstmWeights w{Tensor::of(wv, {in + H, 4 * H}, DType::F64).set_requires_grad(),
                  Tensor::of(bv, {4 * H}, DType::F64).set_requires_grad(), Tensor::of(ev, {H, H}, DType::F64)};
    LstmState s{Tensor::zeros({B, H}, DType::F64), Tensor::zeros({B, H}, DType::F64)};
    Tensor y = packed ? packed_lstm(w, x, lengths) : lstm_forward(w, x, s, 0, 0, &lengths);
    // A loss that weighs every output differently.
    std::vector<double> r(static_cast<size_t>(B * T * H));
    for (size_t i = 0; i < r.size(); ++i) r[i] = std::sin(0.7 * static_cast<double>(i));
    backward(ops::sum(ops::mul(y, Tensor::of(r, {B, T, H}, DType::F64))));
    return std::vector<std::vector<double>>{y.values(), x.grad().values(), w.W.grad().values(), w.B.grad().values()};
  };
  const auto a = run(false), b = run(true);
  for (size_t k = 0; k < a.size(); ++k) {
    ASSERT_EQ(a[k].size(), b[k].size());
    for (size_t i = 0; i < a[k].size(); ++i) EXPECT_NEAR(a[k][i], b[k][i], 1e-12) << "part " << k << " element " << i;
  }
  // Past its length a row's outputs are exactly zero.
  for (int64_t t = lengths[2]; t < T; ++t)
    for (int64_t h = 0; h < H; ++h) EXPECT_EQ(b[0][(2 * T + t) * H + h], 0.0);
}

// BiLstm::forward (both directions packed in one lstm_sequences node) equals the step-by-step
// composition: packed_lstm forwards, and on each row reversed within its length backwards.
TEST(BiLstm, OneNodeEqualsTheStepComposition) {
  std::mt19937_64 rng(5);
  const int64_t B = 5, T = 6, in = 4, H = 3;
  const std::vector<int> lengths = {2, 6, 1, 6, 4};
  std::normal_distribution<double> n(0, 1);
  std::vector<double> xv(B * T * in);
  for (double& v : xv) v = n(rng);
  // Position (b, t) reversed within b's length; padding stays.
  std::vector<int32_t> rev;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t) rev.push_back(static_cast<int32_t>(b * T + (t < lengths[b] ? lengths[b] - 1 - t : t)));
  const Tensor rev_index = Tensor::from(rev, {B * T});
  auto reversed = [&](const Tensor& x) {
    const int64_t F = x.dim(2);
    return ops::reshape(ops::gather_rows(ops::reshape(x, {B * T, F}), rev_index), {B, T, F});
  };
  auto run = [&](bool one_node) {
    std::mt19937_64 init(9);
    BiLstm m = BiLstm::init(in, H, init, Device::cpu());
    for (Tensor* w : {&m.fwd.W, &m.fwd.B, &m.bwd.W, &m.bwd.B}) {
      std::vector<double> v = w->values();
      for (double& e : v) e += 0.1 * n(init);  // nonzero biases too
      *w = Tensor::of(v, w->shape(), DType::F64).set_requires_grad();
    }
    Tensor x = Tensor::of(xv, {B, T, in}, DType::F64).set_requires_grad();
    const Tensor y = one_node ? m.forward(x, lengths)
                              : ops::concat({packed_lstm(m.fwd, x, lengths), reversed(packed_lstm(m.bwd, reversed(x), lengths))}, 2);
    std::vector<double> r(static_cast<size_t>(B * T * 2 * H));
    for (size_t i = 0; i < r.size(); ++i) r[i] = std::cos(0.3 * static_cast<double>(i));
    backward(ops::sum(ops::mul(y, Tensor::of(r, {B, T, 2 * H}, DType::F64))));
    return std::vector<std::vector<double>>{y.values(), x.grad().values(), m.fwd.W.grad().values(), m.fwd.B.grad().values(),
                                            m.bwd.W.grad().values(), m.bwd.B.grad().values()};
  };
  const auto a = run(false), b = run(true);
  for (size_t k = 0; k < a.size(); ++k) {
    ASSERT_EQ(a[k].size(), b[k].size());
    for (size_t i = 0; i < a[k].size(); ++i) EXPECT_NEAR(a[k][i], b[k][i], 1e-12) << "part " << k << " element " << i;
  }
  // Past its length a row's outputs are exactly zero, in both directions.
  for (int64_t t = lengths[0]; t < T; ++t)
    for (int64_t h = 0; h < 2 * H; ++h) EXPECT_EQ(b[0][static_cast<size_t>(t * 2 * H + h)], 0.0);
}

// forward_packed (the sentences back to back, no padding) equals forward on the padded batch:
// outputs and the gradients of input and weights, in f64.
TEST(BiLstm, PackedEqualsPadded) {
  std::mt19937_64 rng(8);
  const int64_t B = 4, T = 5, in = 3, H = 2;
  const std::vector<int> lengths = {3, 5, 1, 4};
  std::normal_distribution<double> n(0, 1);
  std::vector<double> padded(B * T * in, 0.0), packed;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < lengths[b]; ++t)
      for (int64_t i = 0; i < in; ++i) packed.push_back(padded[(b * T + t) * in + i] = n(rng));
  const int64_t N = static_cast<int64_t>(packed.size()) / in;
  std::vector<double> r(static_cast<size_t>(N * 2 * H));
  for (size_t i = 0; i < r.size(); ++i) r[i] = std::sin(0.7 * static_cast<double>(i));
  auto run = [&](bool use_packed) {
    std::mt19937_64 init(3);
    BiLstm m = BiLstm::init(in, H, init, Device::cpu());
    for (Tensor* w : {&m.fwd.W, &m.fwd.B, &m.bwd.W, &m.bwd.B})
      *w = Tensor::of(w->values(), w->shape(), DType::F64).set_requires_grad();
    Tensor x = use_packed ? Tensor::of(packed, {N, in}, DType::F64) : Tensor::of(padded, {B, T, in}, DType::F64);
    x.set_requires_grad();
    Tensor y = use_packed ? m.forward_packed(x, lengths) : m.forward(x, lengths);
    if (!use_packed) {  // the real rows, in packed order
      std::vector<int32_t> idx;
      for (int64_t b = 0; b < B; ++b)
        for (int64_t t = 0; t < lengths[b]; ++t) idx.push_back(static_cast<int32_t>(b * T + t));
      y = ops::gather_rows(ops::reshape(y, {B * T, 2 * H}), Tensor::from(idx, {N}));
    }
    backward(ops::sum(ops::mul(y, Tensor::of(r, {N, 2 * H}, DType::F64))));
    std::vector<double> gx = x.grad().values();
    if (!use_packed) {
      std::vector<double> real;
      for (int64_t b = 0; b < B; ++b)
        for (int64_t t = 0; t < lengths[b]; ++t)
          for (int64_t i = 0; i < in; ++i) real.push_back(gx[(b * T + t) * in + i]);
      gx = real;
    }
    return std::vector<std::vector<double>>{y.values(), gx, m.fwd.W.grad().values(), m.fwd.B.grad().values(),
                                            m.bwd.W.grad().values(), m.bwd.B.grad().values()};
  };
  const auto a = run(false), b = run(true);
  for (size_t k = 0; k < a.size(); ++k) {
    ASSERT_EQ(a[k].size(), b[k].size());
    for (size_t i = 0; i < a[k].size(); ++i) EXPECT_NEAR(a[k][i], b[k][i], 1e-12) << "part " << k << " element " << i;
  }
  EXPECT_THROW(BiLstm::init(in, H, rng, Device::cpu()).forward_packed(Tensor::zeros({N + 1, in}), lengths), Error);
}

// A batch of packed sentences gives each sentence the emissions it has alone, and zeros past its
// length in the [B, T, K] layout the CRF reads.
TEST(NerTagger, PackedSentencesGetTheEmissionsTheyHaveAlone) {
  NerTaggerOptions o;
  o.hidden = 5;
  const NerTagger t = NerTagger::init(4, 3, o, 11, Device::cpu());
  std::mt19937_64 rng(2);
  std::normal_distribution<double> u(0, 1);
  std::vector<double> a(7 * 4), b(3 * 4);
  for (double& v : a) v = u(rng);
  for (double& v : b) v = u(rng);
  Generator gen(0);
  NoGrad ng;
  const std::vector<double> va = t.emissions(Tensor::of(a, {7, 4}), {7}, false, gen).values();
  const std::vector<double> vb = t.emissions(Tensor::of(b, {3, 4}), {3}, false, gen).values();
  std::vector<double> both(b);
  both.insert(both.end(), a.begin(), a.end());
  const Tensor e = t.emissions(Tensor::of(both, {10, 4}), {3, 7}, false, gen);
  ASSERT_EQ(e.shape(), (Shape{2, 7, 3}));
  const std::vector<double> ev = e.values();
  for (size_t i = 0; i < vb.size(); ++i) EXPECT_NEAR(ev[i], vb[i], 1e-5) << "sentence b, value " << i;
  for (size_t i = vb.size(); i < 7 * 3; ++i) EXPECT_EQ(ev[i], 0.0) << "padding of sentence b, value " << i;
  for (size_t i = 0; i < va.size(); ++i) EXPECT_NEAR(ev[7 * 3 + i], va[i], 1e-5) << "sentence a, value " << i;
}

// The training masks: locked dropout keeps the same features of every token of a sentence (scaled
// by 1 / keep), word dropout zeroes whole tokens, and the kept shares match the rates.
TEST(NerTagger, DropoutMasksAreLockedPerSentenceAndWholePerWord) {
  const std::vector<int> lengths = {40, 1, 25, 60};
  const int64_t F = 200;
  Generator gen(4);
  const Tensor m = dropout_mask(lengths, F, 0.5, 0.9, gen, Tensor::zeros({1}, DType::F64));
  ASSERT_EQ(m.shape(), (Shape{126, F}));
  ASSERT_EQ(m.dtype(), DType::F64);
  const std::vector<double> v = m.values();
  int64_t row = 0, dropped_words = 0, kept = 0, sentence_features = 0;
  for (int len : lengths) {
    std::vector<double> pattern;
    for (int t = 0; t < len; ++t, ++row) {
      const std::vector<double> r(v.begin() + row * F, v.begin() + (row + 1) * F);
      for (double x : r) ASSERT_TRUE(x == 0.0 || x == 2.0) << x;
      if (std::all_of(r.begin(), r.end(), [](double x) { return x == 0.0; })) {
        ++dropped_words;
        continue;
      }
      if (pattern.empty()) pattern = r;
      EXPECT_EQ(r, pattern) << "row " << row << ": another locked mask inside one sentence";
    }
    for (double x : pattern) kept += x > 0, ++sentence_features;
  }
  EXPECT_NEAR(static_cast<double>(kept) / static_cast<double>(sentence_features), 0.5, 0.05);
  EXPECT_NEAR(static_cast<double>(dropped_words) / 126.0, 0.1, 0.07);
  // The next draw is another mask.
  EXPECT_NE(dropout_mask(lengths, F, 0.5, 0.9, gen, Tensor::zeros({1}, DType::F64)).values(), v);
}

// Features that carry each token's entity type (plus noise): the BiLSTM-CRF, trained with the
// annealed SGD schedule, must find the spans (dev F1 above 90).
TEST(NerTagger, LearnsSpansFromInformativeFeatures) {
  std::mt19937_64 rng(5);
  std::normal_distribution<double> noise(0, 0.3);
  const std::vector<std::string> types = {"PER", "LOC"};
  auto corpus = [&](int n, std::vector<double>& feats) {
    std::vector<NerSentence> out;
    for (int i = 0; i < n; ++i) {
      NerSentence s;
      const int len = 3 + static_cast<int>(rng() % 6);
      for (int k = 0; k < len;) {
        const int type = static_cast<int>(rng() % 3) - 1;  // -1: O
        const int span = type < 0 ? 1 : 1 + static_cast<int>(rng() % 2);
        for (int j = 0; j < span && k < len; ++j, ++k) {
          s.tokens.push_back("w");
          s.tags.push_back(type < 0 ? "O" : (j == 0 ? "B-" : "I-") + types[static_cast<size_t>(type)]);
          for (int d = 0; d < 4; ++d)  // type indicator, and whether the token starts a span
            feats.push_back(noise(rng) + (d == type + 1 ? 2.0 : 0.0) + (d == 3 && j == 0 && type >= 0 ? 2.0 : 0.0));
        }
      }
      out.push_back(s);
    }
    return out;
  };
  std::vector<double> tf, df;
  const std::vector<NerSentence> train = corpus(150, tf), dev = corpus(50, df);
  const Tensor tx = Tensor::of(tf, {static_cast<int64_t>(tf.size() / 4), 4}),
               dx = Tensor::of(df, {static_cast<int64_t>(df.size() / 4), 4});
  const TagSet tags = TagSet::of(train);
  std::vector<std::vector<int32_t>> ids;
  for (const NerSentence& s : train) ids.push_back(tags.bioes_ids(s.tags));
  NerTaggerOptions o;
  o.hidden = 16, o.locked_dropout = 0.1, o.word_dropout = 0;
  NerTagger t = NerTagger::init(4, static_cast<int64_t>(tags.tags.size()), o, 3, Device::cpu());
  FitOptions fo;
  fo.schedule = FitOptions::Schedule::SgdAnneal;
  fo.lr = 0.1, fo.max_epochs = 25, fo.patience = 3, fo.seed = 1;
  const std::vector<int64_t> off = sentence_offsets(sentence_tokens(train));
  FitResult r = fit_classifier(
      t.params(), static_cast<int64_t>(train.size()),
      [&](const std::vector<int64_t>& rows, Generator& gen) {
        const SentenceBatch b = packed_batch(tx, off, std::vector<size_t>(rows.begin(), rows.end()), &ids, Device::cpu());
        return t.loss(b.x, b.lengths, b.tags, gen);
      },
      [&] { return conlleval(tag_sentences(t, tags, dx, dev, false, Device::cpu())).all.f1(); }, fo);
  EXPECT_GT(r.best_dev, 90.0);
  EXPECT_EQ(tags.tags, (std::vector<std::string>{"B-LOC", "B-PER", "E-LOC", "E-PER", "O", "S-LOC", "S-PER"}));
  EXPECT_THROW(tags.bioes_ids({"B-ORG"}), Error);
}

}  // namespace
}  // namespace sa

namespace sa {
namespace {

// PAN-X zh/ja give one character a token; an encoder trained on segmented text reads them
// regrouped into words, and each character gets its word's vector.
TEST(XlingFeatures, RegroupedCharactersCarryTheirWordsVectors) {
  if (!std::filesystem::exists(kFixture + "/lm_weights.hdf5")) GTEST_SKIP() << "no ../shared/data fixture here";
  std::unique_ptr<ContextualEncoder> enc =
      load_encoder({"", kFixture + "/options.json", kFixture + "/lm_weights.hdf5"}, Device::cpu());
  const std::string muse = testing::temp_file("regroup-x.muse", "tokyo 東京\nuniversity 大學\n");
  CjkLexicon lex;
  lex.add_muse_targets(muse, 0, 0);
  lex.finish(8);
  const LayerSpec spec = parse_layer_spec("concat", enc->n_layers());
  const Sentences chars = {{"東", "京", "的", "大", "學"}, {"Paris", "東", "京"}};
  EXPECT_TRUE(enc->reads_segmented_words());
  EXPECT_DOUBLE_EQ(cjk_character_share(chars), 7.0 / 8.0);
  EXPECT_DOUBLE_EQ(cjk_character_share({{"Paris", "東京"}}), 0.0);
  const Tensor f = regrouped_token_features(*enc, chars, lex, spec, "test");
  const Tensor words = token_features(*enc, {{"東京", "的", "大學"}, {"Paris", "東京"}}, spec, "test");
  ASSERT_EQ(f.dim(0), 8);
  // token -> row of the word features
  const std::vector<int64_t> row = {0, 0, 1, 2, 2, 3, 4, 4};
  const int64_t D = f.dim(1);
  const std::vector<double> fv = f.values(), wv = words.values();
  for (int64_t t = 0; t < 8; ++t)
    for (int64_t d = 0; d < D; ++d) ASSERT_EQ(fv[t * D + d], wv[row[t] * D + d]) << "token " << t << " dim " << d;
  // Embedded one by one, a character's vector is not its word's.
  const std::vector<double> alone = token_features(*enc, chars, spec, "test").values();
  double diff = 0;
  for (int64_t d = 0; d < D; ++d) diff += std::abs(alone[d] - fv[d]);
  EXPECT_GT(diff, 1e-3);
}

// The ner task end to end on the bilm-tf fixture: CoNLL files (IOB1, a -DOCSTART-, a Latin-1
// German file) and a PAN-X file without MISC; two runs, the report's numbers agree with the
// prediction files scored again, and MISC is counted as O where the gold tags have none.
TEST(XlingEval, NerEndToEndOnTheBilmTfFixture) {
  if (!std::filesystem::exists(kFixture + "/lm_weights.hdf5")) GTEST_SKIP() << "no ../shared/data fixture here";
  const std::string dir = ::testing::TempDir() + "/xling_ner";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  auto english = [](int n) {
    std::string en = "-DOCSTART- -X- O O\n\n";
    for (int i = 0; i < n; ++i)
      en += "John NNP I-NP I-PER\nlives VBZ I-VP O\nin IN I-PP O\nParis NNP I-NP I-LOC\n. . O O\n\n"
            "The DT I-NP O\nEuro NNP I-NP I-MISC\nfell VBD I-VP O\n. . O O\n\n";
    return en;
  };
  const std::string train = testing::temp_file("xling_ner/eng.train", english(30));
  const std::string dev = testing::temp_file("xling_ner/eng.testa", english(3));
  const std::string de = testing::temp_file("xling_ner/deu.testa", "J\xfcrgen X X I-PER\nwohnt X X O\nin X X O\nK\xf6ln X X I-LOC\nDeutsch X X I-MISC\n\n");
  const std::string es = testing::temp_file("xling_ner/dev-es.tsv", "es:Juan\tB-PER\nes:vive\tO\nes:en\tO\nes:Madrid\tB-LOC\n\n");
  const std::string cmd = "./bin/xling_eval ner --device cpu --options " + kFixture + "/options.json --weights " +
                          kFixture + "/lm_weights.hdf5 --train " + train + " --dev " + dev + " --test de=" + de +
                          " --test es=" + es + " --runs 2 --max-epochs 3 --hidden 8 --cache " + dir + "/cache";
  // Both runs side by side (--jobs 2, a thread each), then one after the other on one thread:
  // each run's numbers are the same.
  const testing::ToolRun r = testing::run_tool(cmd + " --jobs 2 --predictions " + dir + "/pred --out " + dir + "/ner.json");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_TRUE(testing::contains(r.out, "2 at a time on a thread each")) << r.out;
  const testing::ToolRun one = testing::run_tool("OMP_NUM_THREADS=1 " + cmd + " --jobs 1 --out " + dir + "/ner1.json");
  ASSERT_EQ(one.rc, 0) << one.out;
  EXPECT_EQ(nlohmann::json::parse(std::ifstream(dir + "/ner1.json"))["runs"],
            nlohmann::json::parse(std::ifstream(dir + "/ner.json"))["runs"]);
  EXPECT_TRUE(testing::contains(r.out, "read as ISO-8859-1")) << r.out;
  EXPECT_TRUE(testing::contains(r.out, "predicted MISC counted as O")) << r.out;
  const nlohmann::json rep = nlohmann::json::parse(std::ifstream(dir + "/ner.json"));
  ASSERT_EQ(rep["runs"].size(), 2u);
  EXPECT_TRUE(rep["test"]["es"]["misc_as_o"].get<bool>());
  EXPECT_FALSE(rep["test"]["de"]["misc_as_o"].get<bool>());
  for (int run = 1; run <= 2; ++run) {
    // The prediction file, scored again, gives the run's number.
    std::ifstream f(dir + "/pred/de.run" + std::to_string(run) + ".txt");
    std::vector<TaggedSentence> sents(1);
    for (std::string line; std::getline(f, line);) {
      if (line.empty()) {
        sents.emplace_back();
        continue;
      }
      std::istringstream ss(line);
      TaggedToken t;
      ASSERT_TRUE(ss >> t.token >> t.gold >> t.guess) << line;
      sents.back().push_back(t);
    }
    if (sents.back().empty()) sents.pop_back();
    ASSERT_EQ(sents.size(), 1u);
    EXPECT_EQ(sents[0][0].token, "J\xc3\xbcrgen");  // Latin-1 read and written as UTF-8
    EXPECT_EQ(sents[0][0].gold, "B-PER");  // IOB1 as read, IOB2 as written
    EXPECT_EQ(sents[0][3].gold, "B-LOC");
    for (size_t i = 0; i < sents[0].size(); ++i)  // IOB2: an I- tag continues a chunk of its type
      if (sents[0][i].gold.rfind("I-", 0) == 0)
        EXPECT_TRUE(i > 0 && sents[0][i - 1].gold.substr(2) == sents[0][i].gold.substr(2)) << i;
    EXPECT_NEAR(conlleval(sents).all.f1(), rep["runs"][run - 1]["test"]["de"].get<double>(), 1e-9);
  }
}

}  // namespace
}  // namespace sa

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

// The xnli task end to end on the bilm-tf fixture: SICK-format training pairs, XNLI-format dev and
// test pairs; the report holds both runs.
TEST(XlingEval, XnliEndToEndOnTheBilmTfFixture) {
  if (!std::filesystem::exists(kFixture + "/lm_weights.hdf5")) GTEST_SKIP() << "no ../shared/data fixture here";
  std::string sick = "pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment\n", xnli;
  const char* labels[] = {"ENTAILMENT", "NEUTRAL", "CONTRADICTION"};
  for (int i = 0; i < 30; ++i) {
    sick += std::to_string(i) + "\tA man is playing a guitar.\tA " + (i % 3 == 2 ? "woman is sleeping." : "man plays.") +
            "\t3.0\t" + labels[i % 3] + "\n";
    xnli += std::string("A man is playing a guitar.\tA man plays.\t") + (i % 2 ? "entailment" : "neutral") + "\n";
  }
  const std::string dir = ::testing::TempDir() + "/xling_xnli";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string train = testing::temp_file("xling_xnli/SICK.txt", sick);
  const std::string dev = testing::temp_file("xling_xnli/dev-en.tsv", xnli);
  const testing::ToolRun r = testing::run_tool(
      "./bin/xling_eval xnli --device cpu --options " + kFixture + "/options.json --weights " + kFixture +
      "/lm_weights.hdf5 --train " + train + " --dev " + dev + " --test de=" + dev +
      " --max-epochs 2 --hidden 8 --dense 8 --cache '' --out " + dir + "/x.json");
  ASSERT_EQ(r.rc, 0) << r.out;
  const nlohmann::json rep = nlohmann::json::parse(std::ifstream(dir + "/x.json"));
  EXPECT_EQ(rep["runs"].size(), 2u);  // the task's default
  EXPECT_EQ(rep["settings"]["train_pairs"].get<int>(), 30);
  EXPECT_EQ(rep["test"]["de"]["pairs"].get<int>(), 30);
  EXPECT_NEAR(rep["test"]["de"]["mean"].get<double>(),
              (rep["runs"][0]["test"]["de"].get<double>() + rep["runs"][1]["test"]["de"].get<double>()) / 2, 1e-12);
}

}  // namespace
}  // namespace sa

namespace sa {
namespace {

// Vectors written by bin/embed, read back through --embeddings' encoder, equal the model's own;
// a sentence that is not in the files is an error that quotes it.
TEST(PrecomputedEncoder, ReadsWhatBinEmbedWrote) {
  if (!std::filesystem::exists(kFixture + "/lm_weights.hdf5")) GTEST_SKIP() << "no ../shared/data fixture here";
  const Sentences sentences = {{"The", "cat", "sat", "."}, {"Paris", "is", "big"}, {"Hello"}};
  const std::string input = testing::temp_file("precomputed.txt", "The cat sat .\nParis is big\nHello\n");
  const std::string out = ::testing::TempDir() + "/precomputed.hdf5";
  const testing::ToolRun r = testing::run_tool("./bin/embed --device cpu --options " + kFixture + "/options.json --weights " +
                                               kFixture + "/lm_weights.hdf5 --input " + input + " --output " + out);
  ASSERT_EQ(r.rc, 0) << r.out;
  PrecomputedEncoder pre({out});
  std::unique_ptr<ContextualEncoder> model = load_encoder({"", kFixture + "/options.json", kFixture + "/lm_weights.hdf5"},
                                                          Device::cpu());
  EXPECT_EQ(pre.n_layers(), model->n_layers());
  EXPECT_EQ(pre.dim(), model->dim());
  const std::vector<Tensor> a = pre.embed(sentences), b = model->embed(sentences);
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].shape(), b[i].shape());
    const std::vector<double> va = a[i].values(), vb = b[i].values();
    for (size_t k = 0; k < va.size(); ++k) ASSERT_NEAR(va[k], vb[k], 1e-5) << "sentence " << i;
  }
  const std::string err = testing::error_of([&] { pre.embed({{"not", "there"}}); });
  EXPECT_TRUE(testing::contains(err, "no vectors for the sentence \"not there\"")) << err;
  // xling_eval ner scores such files without a model; a model and --embeddings together are refused.
  const std::string conll = testing::temp_file("precomputed.conll", "The O\ncat B-PER\nsat O\n. O\n\nParis B-LOC\nis O\nbig O\n\n");
  const std::string base = "./bin/xling_eval ner --device cpu --cache '' --runs 1 --max-epochs 2 --hidden 4 --train " +
                           conll + " --dev " + conll + " --test xx=" + conll + " --embeddings " + out;
  const testing::ToolRun ok = testing::run_tool(base);
  EXPECT_EQ(ok.rc, 0) << ok.out;
  EXPECT_TRUE(testing::contains(ok.out, "precomputed.hdf5")) << ok.out;
  const testing::ToolRun both = testing::run_tool(base + " --options " + kFixture + "/options.json --weights " + kFixture +
                                                  "/lm_weights.hdf5");
  EXPECT_NE(both.rc, 0);
  EXPECT_TRUE(testing::contains(both.out, "not both")) << both.out;
}

}  // namespace
}  // namespace sa
