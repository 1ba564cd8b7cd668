// ELMo training pieces: a finite-difference check of the whole loss (both directions, char-CNN,
// highway, projection, LSTMs with skip connection, dropout, sampled softmax) in f64 on a tiny
// configuration, and bilm-tf's row batching.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <set>

#include "data/char_ids.h"
#include "data/dictionary.h"
#include "data/hdf5_file.h"
#include "layers/elmo_encoder.h"
#include "tests/test_util.h"
#include "train/elmo_lm.h"
#include "train/step_flops.h"

namespace sa {
namespace {

ElmoOptions tiny() { return testing::tiny_elmo_options(); }

LmBatch batch(const std::vector<std::string>& tokens, const Vocab& v, int rows, int steps) {
  LmBatch b;
  b.rows = rows;
  b.steps = steps;
  b.char_ids.resize(static_cast<size_t>(rows * steps * chars::kPerToken));
  b.targets.resize(static_cast<size_t>(rows * steps));
  for (int i = 0; i < rows * steps; ++i) {
    chars::token_ids(tokens[i % tokens.size()], &b.char_ids[static_cast<size_t>(i) * chars::kPerToken]);
    b.targets[i] = v.id(tokens[(i + 1) % tokens.size()]);
  }
  return b;
}

// The negatives of ELMo's sampled softmax: distinct ids in range, drawn as TF's log-uniform
// candidate sampler draws them (repeats rejected, every draw counted in `tries`), the same for a
// seed whatever set keeps the seen ids.
TEST(ElmoTrain, LogUniformNegativesAreDistinctAndFollowTheSampler) {
  for (int64_t V : {20, 5000, 60000}) {
    const int n = static_cast<int>(std::min<int64_t>(V, 2000));
    LogUniformSampler s(V);
    std::mt19937_64 rng(42), ref_rng(42);
    int64_t tries = 0;
    const std::vector<int32_t> got = s.sample_unique(n, rng, tries);
    // The procedure written out: u uniform in [0, 1), k = floor(exp(u log(V + 1))) - 1.
    std::uniform_real_distribution<double> u(0.0, 1.0);
    std::set<int32_t> seen;
    std::vector<int32_t> want;
    int64_t ref_tries = 0;
    while (static_cast<int>(want.size()) < n) {
      ++ref_tries;
      const int64_t k = std::clamp<int64_t>(static_cast<int64_t>(std::exp(u(ref_rng) * std::log(V + 1.0))) - 1, 0, V - 1);
      if (seen.insert(static_cast<int32_t>(k)).second) want.push_back(static_cast<int32_t>(k));
    }
    EXPECT_EQ(got, want) << "V=" << V;
    EXPECT_EQ(tries, ref_tries) << "V=" << V;
    EXPECT_GT(tries, n) << "V=" << V << ": a log-uniform draw repeats its frequent ids";
    EXPECT_EQ(std::set<int32_t>(got.begin(), got.end()).size(), got.size());
  }
}

// The log-Q shifts a trainer takes from its tabulated sampler: TF's -log(expected count) written
// out, bit for bit, whether the ids were drawn with repeats (tries > n) or not (tries == n).
TEST(ElmoTrain, TabulatedLogQShiftsAreTheFormulasBits) {
  const int64_t V = 5000;
  LogUniformSampler s(V);
  s.tabulate();
  const std::vector<int32_t> ids = {0, 1, 2, 17, 999, 4999, 1, 0};
  const int n = 100;
  for (int64_t tries : {int64_t{100}, int64_t{137}, int64_t{5000}}) {
    const std::vector<double> got = s.log_q_shift(ids, n, tries);
    ASSERT_EQ(got.size(), ids.size());
    for (size_t i = 0; i < ids.size(); ++i) {
      const double p = (std::log(ids[i] + 2.0) - std::log(ids[i] + 1.0)) / std::log(V + 1.0);
      const double count = tries == n ? p * n : -std::expm1(static_cast<double>(tries) * std::log1p(-p));
      EXPECT_EQ(got[i], -std::log(count)) << "id " << ids[i] << ", tries " << tries;
    }
  }
  EXPECT_EQ(LogUniformSampler(V).log_q_shift(ids, n, 137), s.log_q_shift(ids, n, 137));  // untabulated: the same
}

// A trainer draws the next step's negatives and their log-Q shifts, and makes its tokens
// distinct, ahead of the step: the loss from those equals the loss drawn in the step, bit for bit,
// with the generator left where the step would leave it; the tokens encode as they do undeduplicated.
TEST(ElmoTrain, InputsPreparedAheadGiveTheStepsOwnLoss) {
  const int64_t V = 5000, N = 12, P = 6;
  const int n = 300;
  std::mt19937_64 fill(3);
  std::normal_distribution<double> g(0.0, 1.0);
  auto random = [&](int64_t k) {
    std::vector<double> v(static_cast<size_t>(k));
    for (double& e : v) e = g(fill);
    return v;
  };
  const Tensor x = Tensor::of(random(N * P), {N, P}, DType::F64, Device::cpu());
  const Tensor W = Tensor::of(random(V * P), {V, P}, DType::F64, Device::cpu());
  const Tensor b = Tensor::of(random(V), {V, 1}, DType::F64, Device::cpu());
  std::vector<int32_t> labels(static_cast<size_t>(N));
  for (int64_t i = 0; i < N; ++i) labels[i] = static_cast<int32_t>((i * 37 + 1) % 400);  // some among the frequent draws
  LogUniformSampler sampler(V);
  sampler.tabulate();
  std::mt19937_64 in_step(9), ahead(9);
  std::vector<int32_t> drawn;
  const std::vector<double> want = sampled_softmax_loss(x, W, b, labels, sampler, n, in_step, &drawn).values();
  const SampledCandidates c = draw_candidates(labels, sampler, n, ahead);
  EXPECT_EQ(sampled_softmax_loss(x, W, b, labels, c).values(), want);
  EXPECT_EQ(c.sampled, drawn);
  EXPECT_EQ(in_step(), ahead());

  Vocab v = Vocab::from_words({"<S>", "</S>", "<UNK>", "the", "cat", "sat", "on", "a", "mat", "."});
  ElmoLM lm = ElmoLM::init(tiny(), v.size(), 3, Device::cpu(), DType::F64, true);
  const std::vector<std::string> words = {"<S>", "the", "cat", "sat", "on", "the", "mat", ".", "</S>", "the"};
  LmBatch bf = batch(words, v, 2, 5), bb = batch({words.rbegin(), words.rend()}, v, 2, 5);
  const DistinctTokens t = distinct_batch_tokens(bf, bb);
  EXPECT_EQ(t.count(), 8);  // <S> the cat sat on mat . </S>
  // Rows hash through their end-of-word id but compare whole: rows that differ past it stay apart.
  std::vector<int32_t> two(2 * chars::kPerToken);
  chars::token_ids("cat", two.data());
  chars::token_ids("cat", two.data() + chars::kPerToken);
  EXPECT_EQ(distinct_tokens(two).count(), 1);
  two.back() = chars::kBow;
  EXPECT_EQ(distinct_tokens(two).count(), 2);
  auto [tf, tb] = encode_batches(lm, t, 2, 5);
  std::vector<int32_t> ids(bf.char_ids);
  ids.insert(ids.end(), bb.char_ids.begin(), bb.char_ids.end());
  const std::vector<double> all = lm.bilm.encode(Tensor::from(ids, {20, chars::kPerToken}, Device::cpu())).values();
  std::vector<double> got = tf.values(), back = tb.values();
  got.insert(got.end(), back.begin(), back.end());
  ASSERT_EQ(got.size(), all.size());
  for (size_t i = 0; i < all.size(); ++i) EXPECT_NEAR(got[i], all[i], 1e-12) << "element " << i;

  // Padded (char_tokens_bucket) up to a multiple of the bucket, at most a row a token, with rows
  // no token finds: the same vectors.
  auto padded = [&](int64_t bucket) {
    DistinctTokens p = t;
    pad_distinct_tokens(p, bucket);
    EXPECT_EQ(p.index, t.index);
    EXPECT_TRUE(std::equal(t.chars.begin(), t.chars.end(), p.chars.begin()));
    for (int64_t r = t.count(); r < p.count(); ++r)
      EXPECT_TRUE(std::equal(p.chars.begin(), p.chars.begin() + chars::kPerToken, p.chars.begin() + r * chars::kPerToken));
    return p;
  };
  EXPECT_EQ(padded(0).count(), 8);
  EXPECT_EQ(padded(3).count(), 9);
  EXPECT_EQ(padded(8).count(), 8);
  EXPECT_EQ(padded(64).count(), 20);
  auto [pf, pb] = encode_batches(lm, padded(3), 2, 5);
  EXPECT_EQ(pf.values(), tf.values());
  EXPECT_EQ(pb.values(), tb.values());
}

// In both table layouts: one softmax table for both directions (bilm-tf) and one per direction.
TEST(ElmoTrain, WholeLossGradientMatchesFiniteDifferences) {
  for (bool shared : {true, false}) {
    SCOPED_TRACE(shared ? "shared" : "per_direction");
    Vocab v = Vocab::from_words({"<S>", "</S>", "<UNK>", "the", "cat", "sat", "on", "a", "mat", "."});
    ElmoLM lm = ElmoLM::init(tiny(), v.size(), 3, Device::cpu(), DType::F64, shared);
    EXPECT_EQ(lm.named().size(), lm.bilm.named().size() + (shared ? 2 : 4));
    std::vector<std::string> words = {"<S>", "the", "cat", "sat", "on", "a", "mat", ".", "</S>", "dog"};
    LmBatch bf = batch(words, v, 2, 3), bb = batch({words.rbegin(), words.rend()}, v, 2, 3);
    LogUniformSampler sampler(v.size());
    LossOptions lo{true, 0.2, 4};
    auto loss = [&]() {
      BilmState st = BilmState::zeros(tiny(), 2, Device::cpu(), DType::F64);
      for (auto& d : st.dir)  // a non-zero carried state, as between batches
        for (LstmState& s : d) {
          s.c = ops::add_scalar(s.c, 0.3);
          s.m = ops::add_scalar(s.m, -0.2);
        }
      Generator gen(11);
      std::mt19937_64 rng(5);
      auto [tf, tb] = encode_batches(lm, bf, bb);
      BilmOutputs out = bilm_forward(lm.bilm, {tf, tb}, st, lo.dropout, gen);
      Tensor lf = direction_loss(lm, 0, out.top[0], bf, lo, &sampler, &rng);
      Tensor lb = direction_loss(lm, 1, out.top[1], bb, lo, &sampler, &rng);
      return ops::scale(ops::add(lf, lb), 0.5);
    };
    backward(loss());
    int checked = 0;
    for (NamedTensor& nt : lm.named()) {
      Tensor p = *nt.tensor;
      std::vector<double> analytic = p.is_sparse_grad()
                                         ? p.sparse_grad().to_dense(p.dim(0), p.dim(1)).values()
                                         : (p.grad().defined() ? p.grad().values() : std::vector<double>(p.numel(), 0.0));
      double* data = p.data<double>();
      const int64_t step = std::max<int64_t>(1, p.numel() / 7);
      for (int64_t e = 0; e < p.numel(); e += step) {
        NoGrad ng;
        const double keep = data[e], eps = 1e-6;
        data[e] = keep + eps;
        double up = loss().item();
        data[e] = keep - eps;
        double down = loss().item();
        data[e] = keep;
        double numeric = (up - down) / (2 * eps);
        EXPECT_NEAR(analytic[e], numeric, 1e-6 + 1e-5 * std::abs(numeric)) << nt.name << " element " << e;
        ++checked;
      }
    }
    EXPECT_GT(checked, 100);
  }
}

// The training forward (bilm_forward from a zero state, no dropout) and bin/embed's stateless forward
// give the same top vectors for one sentence: the forward LM on "<S> w1 .. wn", the backward LM
// on "</S> wn .. w1", read at the words.
TEST(ElmoTrain, TrainingForwardEqualsTheEmbedder) {
  Vocab v = Vocab::from_words({"<S>", "</S>", "<UNK>", "the", "cat", "sat", "on", "a", "mat", "."});
  ElmoOptions o = tiny();
  o.proj_clip = 0.5;  // binding, as the clip must act the same in both
  ElmoLM lm = ElmoLM::init(o, v.size(), 3, Device::cpu(), DType::F64);
  const std::vector<std::string> words = {"the", "cat", "sat", "on", "a", "mat", "."};
  const int n = static_cast<int>(words.size());
  std::vector<std::string> fwd = {"<S>"}, bwd = {"</S>"};
  for (int i = 0; i < n; ++i) fwd.push_back(words[i]), bwd.push_back(words[n - 1 - i]);
  LmBatch bf = batch(fwd, v, 1, n + 1), bb = batch(bwd, v, 1, n + 1);
  BilmState st = BilmState::zeros(o, 1, Device::cpu(), DType::F64);
  Generator gen(1);
  auto [tf, tb] = encode_batches(lm, bf, bb);
  std::array<Tensor, 2> tops = bilm_forward(lm.bilm, {tf, tb}, st, 0.0, gen).top;
  const std::vector<double> f = tops[0].values(), b = tops[1].values();
  ElmoEncoder emb(lm.bilm);
  const std::vector<double> e = emb.embed({words})[0].values();  // [3, n, 2P]
  const int64_t P = o.projection_dim;
  for (int i = 0; i < n; ++i)
    for (int64_t k = 0; k < P; ++k) {
      EXPECT_NEAR(e[(2 * n + i) * 2 * P + k], f[(i + 1) * P + k], 1e-12) << "forward, word " << i;
      EXPECT_NEAR(e[(2 * n + i) * 2 * P + P + k], b[(n - i) * P + k], 1e-12) << "backward, word " << i;
    }
}

// Stateless embedding does not depend on the batch: sentences of different lengths embedded
// together (the short ones padded) equal each embedded alone.
TEST(ElmoTrain, StatelessEmbeddingIgnoresPadding) {
  ElmoOptions o = tiny();
  o.proj_clip = 0.5;
  ElmoModel m64 = ElmoModel::init(o, 9, Device::cpu(), DType::F64);
  const std::vector<std::vector<std::string>> batch = {{"a", "cat", "sat"}, {"the", "mat", ".", "on", "a", "cat"}, {"on"}};
  ElmoEncoder together(m64), alone(m64);
  const std::vector<Tensor> t = together.embed(batch);
  for (size_t i = 0; i < batch.size(); ++i) {
    const std::vector<double> a = t[i].values(), b = alone.embed({batch[i]})[0].values();
    ASSERT_EQ(a.size(), b.size());
    for (size_t k = 0; k < a.size(); ++k) ASSERT_NEAR(a[k], b[k], 1e-12) << "sentence " << i << " value " << k;
  }
}

// One training step's loss and every gradient on CUDA against the CPU, f32.
// Tolerance: |cuda - cpu| <= 1e-5 + rel * max|cpu gradient of that tensor|, rel = 1e-3 (f32, sums
// reordered) or 1e-2 with CUDA's products on TF32 (10-bit mantissas); the loss within rel / 100 or
// rel (TF32).
void expect_cuda_step_matches_cpu(const ElmoOptions& o, bool tf32 = false) {
  const double rel = tf32 ? 1e-2 : 1e-3;
  Vocab v = Vocab::from_words({"<S>", "</S>", "<UNK>", "the", "cat", "sat", "on", "a", "mat", "."});
  std::vector<std::string> words = {"<S>", "the", "cat", "sat", "on", "a", "mat", ".", "</S>", "dog"};
  LmBatch bf = batch(words, v, 3, 4), bb = batch({words.rbegin(), words.rend()}, v, 3, 4);
  LogUniformSampler sampler(v.size());
  LossOptions lo{true, 0.2, 5};
  auto run = [&](Device d, std::vector<std::vector<double>>& grads) {
    ElmoLM lm = ElmoLM::init(o, v.size(), 3, d, DType::F32);
    BilmState st = BilmState::zeros(o, 3, d, DType::F32);
    Generator gen(11);
    std::mt19937_64 rng(5);
    auto [tf, tb] = encode_batches(lm, bf, bb);
    BilmOutputs out = bilm_forward(lm.bilm, {tf, tb}, st, lo.dropout, gen);
    Tensor loss = ops::scale(ops::add(direction_loss(lm, 0, out.top[0], bf, lo, &sampler, &rng),
                                      direction_loss(lm, 1, out.top[1], bb, lo, &sampler, &rng)),
                             0.5);
    double value = loss.item();
    backward(loss);
    for (NamedTensor& nt : lm.named()) {
      Tensor p = *nt.tensor;
      grads.push_back(p.is_sparse_grad() ? p.sparse_grad().to_dense(p.dim(0), p.dim(1)).values()
                                          : p.grad().defined() ? p.grad().values() : std::vector<double>(p.numel(), 0.0));
    }
    return value;
  };
  std::vector<std::vector<double>> gc, gg;
  const double lc = run(Device::cpu(), gc);
  backend_uncounted(Device::cuda(0)).set_tf32(tf32);
  const double lg = run(Device::cuda(0), gg);
  backend_uncounted(Device::cuda(0)).set_tf32(false);
  EXPECT_NEAR(lc, lg, (tf32 ? 1e-2 : 1e-5) * std::abs(lc));
  ElmoLM names = ElmoLM::init(o, v.size(), 3, Device::cpu());
  std::vector<NamedTensor> nts = names.named();
  for (size_t i = 0; i < gc.size(); ++i) {
    double scale = 0;
    for (double x : gc[i]) scale = std::max(scale, std::abs(x));
    for (size_t e = 0; e < gc[i].size(); ++e)
      EXPECT_NEAR(gc[i][e], gg[i][e], 1e-5 + rel * scale) << nts[i].name << " element " << e;
  }
}

// With proj_clip the CUDA LSTMs step (exact proj_clip).
TEST(ElmoTrain, CudaStepMatchesCpu) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no GPU present: CUDA-vs-CPU training step skipped";
  expect_cuda_step_matches_cpu(tiny());
}

// With lstm.cudnn "on" (the model then has no clips) and a projection smaller than the cell, the
// LSTMs run through cuDNN's RNN.
TEST(ElmoTrain, CudaCudnnStepMatchesCpu) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no GPU present: CUDA (cuDNN) vs CPU training step skipped";
  ElmoOptions o = tiny();
  o.lstm_dim = 6;
  o.cudnn = "on";
  if (!ops::lstm_uses_cudnn(Device::cuda(0), o.lstm_path(), o.effective_cell_clip(), o.effective_proj_clip(),
                            o.lstm_dim, o.projection_dim))
    GTEST_SKIP() << "built without cuDNN: the cuDNN training step is not checked";
  expect_cuda_step_matches_cpu(o);
}

// precision = "tf32": the same step on TF32 tensor cores stays close to the f32 CPU step.
TEST(ElmoTrain, CudaTf32StepIsCloseToCpu) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no GPU present: TF32 training step skipped";
  expect_cuda_step_matches_cpu(tiny(), true);
}

TEST(ElmoTrain, BilmWeightsRoundTrip) {
  ElmoModel m = ElmoModel::init(tiny(), 9);
  std::string path = ::testing::TempDir() + "/w.hdf5";
  m.save_bilm(path);
  H5File f = H5File::open(path);
  EXPECT_EQ(f.read("CNN/W_cnn_1").shape(), (Shape{1, 2, 3, 3}));  // TF conv2d layout [1, width, C, n]
  EXPECT_EQ(f.read("RNN_1/RNN/MultiRNNCell/Cell1/LSTMCell/W_0").shape(), (Shape{8, 12}));
  ElmoModel back = ElmoModel::load_bilm(tiny(), path);
  std::vector<NamedTensor> a = m.named(), b = back.named();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].tensor->values(), b[i].tensor->values()) << a[i].name;
}

TEST(ElmoTrain, RowsFlowAcrossSentencesAsBilmTf) {
  // Two sentences "a b" and "c": the stream is <S> a b </S> <S> c </S>; </S> is a target, never
  // an input, and the row continues with the next sentence without a reset.
  std::string dir = ::testing::TempDir() + "/rows";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/c.txt") << "a b\nc\n";
  Vocab v = Vocab::from_words({"<S>", "</S>", "<UNK>", "a", "b", "c"});
  LmStream s(std::make_unique<ShardedCorpus>(dir + "/c.txt", 1, false, false), v, 1, 4, false);
  LmBatch b;
  s.next(b);
  EXPECT_EQ(b.targets, (std::vector<int32_t>{3, 4, 1, 5}));  // a b </S> c
  std::vector<int32_t> second_input(b.char_ids.begin() + 3 * chars::kPerToken, b.char_ids.begin() + 4 * chars::kPerToken);
  std::vector<int32_t> bos(chars::kPerToken);
  chars::token_ids("<S>", bos.data());
  EXPECT_EQ(second_input, bos);  // the 4th input is the next sentence's <S>
  LmStream r(std::make_unique<ShardedCorpus>(dir + "/c.txt", 1, false, false), v, 1, 3, true);
  r.next(b);
  EXPECT_EQ(b.targets, (std::vector<int32_t>{4, 3, 0}));  // reversed: </S> b a <S> -> targets b a <S>
}

// Mixed corpora (bilingual training): every target carries its sentence's language, in both
// directions and in a data-parallel rank's rows; a translation table answers per language.
TEST(ElmoTrain, MixedBatchesCarryEachTokensLanguage) {
  const std::string dir = ::testing::TempDir() + "/mixed-lang";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/l1.txt") << "a b\nb a a\n";
  std::ofstream(dir + "/l2.txt") << "x y y\ny\n";
  Vocab v = Vocab::from_words({"<S>", "</S>", "<UNK>", "a", "b", "x", "y"});
  for (bool reverse : {false, true}) {
    auto corpus = std::make_unique<ShardedCorpus>(dir + "/l1.txt", 1, false);
    corpus->mix_with(std::make_unique<ShardedCorpus>(dir + "/l2.txt", 2, false), 0.5);
    LmStream s(std::move(corpus), v, 3, 7, reverse);
    LmBatch b;
    int seen[2] = {0, 0};
    for (int i = 0; i < 20; ++i) {
      s.next(b);
      ASSERT_EQ(b.lang.size(), b.targets.size());
      for (size_t k = 0; k < b.targets.size(); ++k) {
        const int32_t t = b.targets[k];
        if (t == 3 || t == 4) {
          EXPECT_EQ(b.lang[k], 0) << "a target of the first corpus";
        }
        if (t == 5 || t == 6) {
          EXPECT_EQ(b.lang[k], 1) << "a target of the second corpus";
        }
        ++seen[b.lang[k]];
      }
    }
    EXPECT_GT(seen[0], 20);
    EXPECT_GT(seen[1], 20);
    const LmBatch r = batch_rows(b, 1, 2);
    EXPECT_EQ(r.lang, std::vector<uint8_t>(b.lang.begin() + 7, b.lang.end()));
  }
  TranslationTable t;
  t.per_word = 1;
  t.ids = {-1, -1, -1, 5, -1, -1, -1};  // a -> x
  EXPECT_EQ(*t.of(3, 1), 5) << "without ids_l2 every language reads ids";
  t.ids_l2 = {-1, -1, -1, -1, -1, 3, -1};  // x -> a
  EXPECT_EQ(*t.of(3, 0), 5);
  EXPECT_EQ(*t.of(3, 1), -1);
  EXPECT_EQ(*t.of(5, 1), 3);
}

// state_reset: rows are zeroed in every layer and direction with the given probability, the same
// rows for the same seed, and the others keep their state.
TEST(ElmoTrain, StateResetZeroesRandomRowsDeterministically) {
  ElmoOptions o = testing::tiny_elmo_options();
  auto filled = [&] {
    BilmState s = BilmState::zeros(o, 200, Device::cpu(), DType::F32);
    for (auto& d : s.dir)
      for (LstmState& l : d) l = {Tensor::full(l.c.shape(), 0.5), Tensor::full(l.m.shape(), -0.25)};
    return s;
  };
  auto zero_rows = [&](const BilmState& s, int dir, int layer) {
    std::vector<int> rows;
    std::vector<double> c = s.dir[dir][layer].c.values(), m = s.dir[dir][layer].m.values();
    const int64_t H = s.dir[dir][layer].c.dim(1), P = s.dir[dir][layer].m.dim(1);
    for (int r = 0; r < 200; ++r) {
      const bool cz = c[r * H] == 0.0, mz = m[r * P] == 0.0;
      EXPECT_EQ(cz, mz) << "row " << r;
      for (int64_t k = 0; k < H; ++k) EXPECT_EQ(c[r * H + k], cz ? 0.0 : 0.5);
      if (cz) rows.push_back(r);
    }
    return rows;
  };
  BilmState a = filled(), b = filled(), none = filled(), all = filled();
  a.reset_rows(0.3, 42);
  b.reset_rows(0.3, 42);
  none.reset_rows(0.0, 42);
  all.reset_rows(1.0, 42);
  std::vector<int> ra = zero_rows(a, 0, 0);
  EXPECT_EQ(ra, zero_rows(a, 0, 1));  // every layer of a direction
  EXPECT_EQ(ra, zero_rows(b, 0, 0));  // the same seed resets the same rows
  EXPECT_GT(ra.size(), 35u);
  EXPECT_LT(ra.size(), 85u);
  EXPECT_NE(ra, zero_rows(a, 1, 0));  // each direction draws its own rows
  EXPECT_TRUE(zero_rows(none, 1, 1).empty());
  EXPECT_EQ(zero_rows(all, 1, 1).size(), 200u);
}

}  // namespace
}  // namespace sa

namespace sa {
namespace {

// The clean top output (selection's vector with select_after_dropout = false) adds the undropped
// input of the top layer where the training output adds the dropped one: with dropout 0.5 their
// difference is +x where the mask dropped x and -x where it kept (and doubled) it; without
// dropout they are one tensor.
TEST(ElmoTrain, CleanTopAddsTheUndroppedResidual) {
  const ElmoOptions o = testing::tiny_elmo_options();
  Vocab v = Vocab::from_words({"<S>", "</S>", "<UNK>", "the", "cat", "sat", "on", "a", "mat", "."});
  std::vector<std::string> words = {"<S>", "the", "cat", "sat", "on", "a", "mat", ".", "</S>", "dog"};
  LmBatch bf = batch(words, v, 3, 4), bb = batch({words.rbegin(), words.rend()}, v, 3, 4);
  for (double p : {0.0, 0.5}) {
    ElmoLM lm = ElmoLM::init(o, v.size(), 3, Device::cpu(), DType::F64);
    BilmState st = BilmState::zeros(o, 3, Device::cpu(), DType::F64);
    Generator gen(4);
    NoGrad ng;
    auto [tf, tb] = encode_batches(lm, bf, bb);
    const BilmOutputs out = bilm_forward(lm.bilm, {tf, tb}, st, p, gen);
    for (int d = 0; d < 2; ++d) {
      const std::vector<double> clean = out.clean_top(d).values(), top = out.layers[d].back().values(),
                                x = out.layers[d][0].values();  // the top layer's undropped input
      ASSERT_EQ(clean.size(), x.size());
      int up = 0, down = 0;
      for (size_t i = 0; i < clean.size(); ++i) {
        if (p == 0) {
          EXPECT_EQ(clean[i], top[i]);
          continue;
        }
        if (std::abs(x[i]) < 1e-9) continue;
        const double r = (clean[i] - top[i]) / x[i];
        EXPECT_TRUE(std::abs(r - 1) < 1e-9 || std::abs(r + 1) < 1e-9) << "element " << i << ": " << r;
        (r > 0 ? up : down)++;
      }
      if (p > 0) {
        EXPECT_TRUE(up > 0 && down > 0);
      }
    }
  }
}

}  // namespace
}  // namespace sa

// bench train's FLOP count: every product of a step from the shapes, against a hand count.
TEST(StepFlops, CountsEveryProductOfAStep) {
  sa::TrainConfig c;
  c.batch_size = 2, c.unroll_steps = 3, c.n_negative_samples_batch = 7;
  c.model.char_dim = 3, c.model.filters = {{1, 4}, {2, 5}}, c.model.n_highway = 1;
  c.model.projection_dim = 4, c.model.lstm_dim = 6, c.model.n_layers = 2;
  double step = 0;
  for (const sa::StepGemm& g : sa::elmo_step_gemms(c, 5)) step += g.flops();
  // Forward: char CNN 2*(5*50)*4*3 + 2*(5*49)*5*6; highway 2*5*18*9; token projection 2*5*4*9;
  // per LSTM layer, two directions: inputs 2*6*24*4*2, recurrence 2*2*24*4*6, projection
  // 2*2*4*6*6; softmax 2*6*7*4*2. Backward: twice each product, and the CNN's winning windows
  // (2/50 and 2/49 of its forward).
  const double products = 1620 + 360 + 2 * (2304 + 2304 + 576) + 672;
  EXPECT_DOUBLE_EQ(step, 3 * products + 6000 * (1 + 2.0 / 50) + 14700 * (1 + 2.0 / 49));
  // SaELMo's candidate rows, as the trainer counted them (11.4 a direction): 11 rows, not 7.
  double sense_step = 0;
  for (const sa::StepGemm& g : sa::elmo_step_gemms(c, 5, 11.4)) sense_step += g.flops();
  EXPECT_DOUBLE_EQ(sense_step - step, 3 * 2.0 * 6 * (11 - 7) * 4 * 2);
}
