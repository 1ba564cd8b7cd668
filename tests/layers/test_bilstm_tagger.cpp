// The NER tagger's BiLSTM (packed, padded and step by step agree, in f64) and the tagger's
// emissions, dropout masks and learning.
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
#include "eval/ner_task.h"
#include "layers/bilstm.h"
#include "tests/test_util.h"

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
