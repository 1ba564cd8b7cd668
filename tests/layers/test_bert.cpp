// BERT against the reference of tests/reference/bert_reference.py (plain torch ops, float64 on the
// float32 weights): every layer's output, the MLM loss and every parameter's gradient, with the
// weights read through the Hugging Face reader users use; the Hugging Face writer round trip.
#include <gtest/gtest.h>

#include "tests/test_util.h"

#include <cmath>
#include <cstdlib>
#include <random>

#include "data/safetensors.h"
#include "layers/bert.h"
#include "layers/bert_encoder.h"
#include "layers/load_encoder.h"

namespace sa {
namespace {

const std::string kFixture = "tests/reference/bert_small";

struct Reference {
  explicit Reference(const std::string& fixture) : f(load_safetensors(fixture + "/reference.safetensors")) {}
  SafetensorsFile f;
  const Tensor& operator[](const std::string& name) const { return f.tensors.at(name); }
};

// The MLM loss of the reference: mean cross entropy over the labelled positions.
Tensor mlm_loss(const BertModel& m, const std::vector<Tensor>& hidden, const Tensor& labels) {
  const int64_t N = labels.numel(), H = m.config.hidden;
  std::vector<int32_t> lab;
  int count = 0;
  for (double v : labels.values()) lab.push_back(v < 0 ? -1 : static_cast<int32_t>(v)), count += v >= 0;
  Tensor per_row = ops::cross_entropy(m.mlm_logits(ops::reshape(hidden.back(), {N, H})), Tensor::from(lab, {N}, m.device()));
  return ops::scale(ops::sum(per_row), 1.0 / count);
}

double max_abs(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m = std::max(m, std::abs(x));
  return m;
}

void check_against_reference(DType dt, double forward_tol, double grad_rel_tol, const std::string& fixture = kFixture) {
  Reference ref(fixture);
  BertModel m = BertModel::load_hf(fixture, Device::cpu(), dt);
  for (Tensor& p : m.params()) p.set_requires_grad();
  std::vector<uint8_t> mask;
  for (double v : ref["attention_mask"].values()) mask.push_back(static_cast<uint8_t>(v));
  const BertBatch b{ref["input_ids"], ref["token_type_ids"], Tensor::from(mask, ref["attention_mask"].shape())};
  const std::vector<Tensor> hidden = m.forward(b);
  ASSERT_EQ(hidden.size(), 3u);
  for (size_t i = 0; i < hidden.size(); ++i) {
    const std::vector<double> got = hidden[i].values(), want = ref["hidden." + std::to_string(i)].values();
    ASSERT_EQ(got.size(), want.size());
    for (size_t k = 0; k < got.size(); ++k) ASSERT_NEAR(got[k], want[k], forward_tol) << "layer " << i << " element " << k;
  }
  Tensor loss = mlm_loss(m, hidden, ref["labels"]);
  EXPECT_NEAR(loss.item(), ref["loss"].item(), forward_tol);
  backward(loss);
  int checked = 0;
  for (auto& [name, t] : bert_hf_tensors(m)) {
    SCOPED_TRACE(name);
    // The gradient of a query/key/value part is the same rows of the fused matrix's gradient.
    const std::string fused = name.find(".attention.self.") != std::string::npos
                                  ? name.substr(0, name.find("attention.self.") + 15) + "qkv" +
                                        name.substr(name.rfind('.'))
                                  : name;
    Tensor param;
    for (NamedTensor& nt : m.named())
      if (nt.name == fused) param = *nt.tensor;
    ASSERT_TRUE(param.defined());
    Tensor g = param.grad();
    if (fused != name) {
      const int64_t H = m.config.hidden;
      const std::string part = name.substr(name.find("attention.self.") + 15);
      const int k = part.rfind("query", 0) == 0 ? 0 : part.rfind("key", 0) == 0 ? 1 : 2;
      g = g.rows(k * H, (k + 1) * H);
    }
    const std::vector<double> got = g.values(), want = ref["grad." + name].values();
    ASSERT_EQ(got.size(), want.size());
    // Relative to the tensor's largest gradient; the key bias's gradient is 0 in exact arithmetic
    // (a constant added to every score of a query), so its scale is floored at 0.01.
    const double scale = std::max(max_abs(want), 1e-2);
    for (size_t k = 0; k < got.size(); ++k) ASSERT_NEAR(got[k] / scale, want[k] / scale, grad_rel_tol) << "element " << k;
    ++checked;
  }
  EXPECT_EQ(checked, 5 + 2 * 16 + 5);  // embeddings, two layers with q/k/v apart, the MLM head
}

TEST(Bert, Float32MatchesTheTorchReference) { check_against_reference(DType::F32, 1e-5, 1e-4); }
TEST(Bert, Float64MatchesTheTorchReferenceClosely) { check_against_reference(DType::F64, 1e-10, 1e-9); }

// The same weights with hidden_act "gelu" (the erf form of most published checkpoints), whose
// reference differs from the tanh form's; the config round trip keeps the form.
TEST(Bert, ExactGeluCheckpointMatchesItsTorchReference) {
  const std::string erf = "tests/reference/bert_small_erf";
  check_against_reference(DType::F32, 1e-5, 1e-4, erf);
  check_against_reference(DType::F64, 1e-10, 1e-9, erf);
  EXPECT_GT(std::abs(Reference(erf)["loss"].item() - Reference(kFixture)["loss"].item()), 1e-6);
  const BertModel m = BertModel::load_hf(erf);
  EXPECT_TRUE(m.config.exact_gelu);
  EXPECT_FALSE(BertModel::load_hf(kFixture).config.exact_gelu);
  const std::string saved = ::testing::TempDir() + "/bert-erf-config.json";
  m.config.save_hf_json(saved);
  EXPECT_TRUE(BertConfig::from_hf_json(saved).exact_gelu);
}

// The attention op equals the unfused ops it replaces, dropout included: the same Philox elements
// drop the same probabilities.
TEST(Bert, AttentionOpEqualsTheUnfusedPath) {
  const int64_t B = 2, H = 3, T = 6, d = 4;
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> u(-1, 1);
  auto draw = [&] {
    std::vector<double> v(static_cast<size_t>(B * H * T * d));
    for (double& x : v) x = u(rng);
    return Tensor::of(v, {B, H, T, d}, DType::F64);
  };
  const Tensor q = draw(), k = draw(), v = draw();
  const std::vector<uint8_t> keys = {1, 1, 1, 0, 1, 0, 1, 1, 1, 1, 1, 1};
  for (double p : {0.0, 0.3}) {
    Generator g1(99), g2(99);
    const Tensor fused = ops::attention(q, k, v, Tensor::from(keys, {B, T}), 0.5, p, &g1);
    const Tensor unfused = testing::unfused_attention(q, k, v, keys, 0.5, p, g2);
    const std::vector<double> a = fused.values(), b = unfused.values();
    for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], 1e-12) << "p " << p << " element " << i;
    EXPECT_EQ(g1.offset, g2.offset);
  }
}

// An exported run against Hugging Face transformers' BertForMaskedLM reading the same files: the
// GPU job hf-check trains BERT-tiny, exports it, has tests/gpu/hf_reference.py write what
// transformers computes (every hidden state and the MLM logits) and points SA_HF_CHECK_DIR at it.
// Without it, the plain-torch fixture's hidden states (it has no logits).
TEST(Bert, ExportedRunMatchesTransformers) {
  const char* env = std::getenv("SA_HF_CHECK_DIR");
  const std::string dir = env ? env : kFixture;
  Reference ref(dir);
  const BertModel m = BertModel::load_hf(dir, Device::cpu(), DType::F32);
  std::vector<uint8_t> mask;
  for (double v : ref["attention_mask"].values()) mask.push_back(static_cast<uint8_t>(v));
  const BertBatch b{ref["input_ids"], ref["token_type_ids"], Tensor::from(mask, ref["attention_mask"].shape())};
  NoGrad ng;
  const std::vector<Tensor> hidden = m.forward(b);
  ASSERT_EQ(static_cast<int>(hidden.size()), m.config.layers + 1);
  // f32 against f32 (or f64 for the fixture): a relative tolerance, since a trained model's
  // activations grow well beyond 1.
  auto expect_close = [](const std::vector<double>& got, const std::vector<double>& want, const std::string& what) {
    ASSERT_EQ(got.size(), want.size()) << what;
    for (size_t k = 0; k < got.size(); ++k)
      ASSERT_NEAR(got[k], want[k], 2e-4 * (1 + std::abs(want[k]))) << what << " element " << k;
  };
  for (size_t i = 0; i < hidden.size(); ++i)
    expect_close(hidden[i].values(), ref["hidden." + std::to_string(i)].values(), "hidden state " + std::to_string(i));
  if (!ref.f.tensors.count("logits")) return;
  const int64_t N = hidden.back().dim(0) * hidden.back().dim(1);
  expect_close(m.mlm_logits(ops::reshape(hidden.back(), {N, m.config.hidden})).values(), ref["logits"].values(),
               "MLM logits");
}

// The encoder every tool reads BERT through: one vector per word, the mean (or first) of its
// pieces' vectors, equal to the model's own output on the same pieces.
TEST(Bert, EncoderGivesOneVectorPerWord) {
  EXPECT_TRUE(is_bert_dir(kFixture));
  const std::unique_ptr<ContextualEncoder> enc = load_encoder({kFixture, "", "", "mean"}, Device::cpu());
  const std::unique_ptr<ContextualEncoder> first = load_encoder({kFixture, "", "", "first"}, Device::cpu());
  EXPECT_EQ(enc->n_layers(), 3);
  EXPECT_EQ(enc->dim(), 16);
  const Sentences s = {{"The", "banks", "of", "the", "river"}, {"we", "sat"}};
  const std::vector<Tensor> out = enc->embed(s), out_first = first->embed(s);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].shape(), Shape({3, 5, 16}));
  EXPECT_EQ(out[1].shape(), Shape({3, 2, 16}));
  // The model on [CLS] the bank ##s of the river [SEP] (lowercased: the fixture has no tokenizer config).
  BertModel m = BertModel::load_hf(kFixture);
  const WordPieceVocab v = WordPieceVocab::load(kFixture + "/vocab.txt");
  std::vector<int32_t> ids;
  for (const char* p : {"[CLS]", "the", "bank", "##s", "of", "the", "river", "[SEP]"}) ids.push_back(v.id(p));
  const int64_t T = static_cast<int64_t>(ids.size());
  const std::vector<Tensor> h = m.forward({Tensor::from(ids, {1, T}), Tensor::zeros({1, T}, DType::I32),
                                           Tensor::full({1, T}, 1.0, DType::U8)});
  const std::vector<double> top = h[2].values(), got = out[0].values(), got_first = out_first[0].values();
  for (int c = 0; c < 16; ++c) {
    EXPECT_NEAR(got[(2 * 5 + 0) * 16 + c], top[1 * 16 + c], 1e-5);  // "The" -> the
    EXPECT_NEAR(got[(2 * 5 + 1) * 16 + c], (top[2 * 16 + c] + top[3 * 16 + c]) / 2, 1e-5);  // bank ##s
    EXPECT_NEAR(got_first[(2 * 5 + 1) * 16 + c], top[2 * 16 + c], 1e-5);
    EXPECT_NEAR(got[(2 * 5 + 4) * 16 + c], top[6 * 16 + c], 1e-5);  // river
  }
}

TEST(Bert, HuggingFaceFilesRoundTrip) {
  BertModel m = BertModel::load_hf(kFixture);
  const std::string dir = ::testing::TempDir() + "/bert-roundtrip";
  std::filesystem::create_directories(dir);
  m.config.save_hf_json(dir + "/config.json");
  m.save_hf_weights(dir + "/model.safetensors");
  BertModel back = BertModel::load_hf(dir);
  std::vector<NamedTensor> a = m.named(), b = back.named();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].tensor->values(), b[i].tensor->values()) << a[i].name;
  // The file holds Hugging Face's names, query/key/value apart, and nothing else.
  const SafetensorsFile written = load_safetensors(dir + "/model.safetensors");
  const SafetensorsFile original = load_safetensors(kFixture + "/model.safetensors");
  ASSERT_EQ(written.tensors.size(), original.tensors.size());
  for (const auto& [name, t] : original.tensors) {
    ASSERT_TRUE(written.tensors.count(name)) << name;
    EXPECT_EQ(written.tensors.at(name).values(), t.values()) << name;
  }
}

// Google's converted checkpoints name LayerNorm parameters gamma and beta, and a bare encoder
// (BertModel) has no "bert." prefix and no MLM head: both read, with the same encoder outputs.
TEST(Bert, LoaderReadsGammaBetaNamesAndBareEncoders) {
  const std::string dir = ::testing::TempDir() + "/bert-google-names";
  std::filesystem::create_directories(dir);
  BertModel m = BertModel::load_hf(kFixture);
  m.config.save_hf_json(dir + "/config.json");
  std::vector<std::pair<std::string, Tensor>> renamed;
  for (auto [name, t] : bert_hf_tensors(m)) {
    if (name.rfind("cls.", 0) == 0) continue;
    if (name.ends_with("LayerNorm.weight")) name = name.substr(0, name.size() - 6) + "gamma";
    if (name.ends_with("LayerNorm.bias")) name = name.substr(0, name.size() - 4) + "beta";
    renamed.emplace_back(name.substr(5), t);  // drop "bert."
  }
  save_safetensors(dir + "/model.safetensors", renamed, {});
  BertModel back = BertModel::load_hf(dir);
  EXPECT_FALSE(back.has_mlm_head);
  const BertBatch b{Tensor::from(std::vector<int32_t>{2, 5, 6, 3}, {1, 4}), Tensor::zeros({1, 4}, DType::I32),
                    Tensor::full({1, 4}, 1.0, DType::U8)};
  EXPECT_EQ(back.forward(b).back().values(), m.forward(b).back().values());
}

TEST(Bert, LoaderNamesTheMissingTensorAndBadConfig) {
  const std::string dir = ::testing::TempDir() + "/bert-broken";
  std::filesystem::create_directories(dir);
  BertModel m = BertModel::load_hf(kFixture);
  m.config.save_hf_json(dir + "/config.json");
  std::vector<std::pair<std::string, Tensor>> t = bert_hf_tensors(m);
  t.erase(t.begin() + 3);  // bert.embeddings.LayerNorm.weight
  save_safetensors(dir + "/model.safetensors", t, {});
  try {
    BertModel::load_hf(dir);
    FAIL() << "a missing tensor must fail";
  } catch (const std::exception& e) {
    EXPECT_TRUE(testing::contains(e.what(), "bert.embeddings.LayerNorm.weight' missing")) << e.what();
  }
  std::ofstream(dir + "/config.json") << R"({"model_type": "bert", "vocab_size": 25, "hidden_size": 15,
    "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 32})";
  try {
    BertModel::load_hf(dir);
    FAIL() << "15 hidden units over 2 heads must fail";
  } catch (const std::exception& e) {
    EXPECT_TRUE(testing::contains(e.what(), "config.json: hidden size 15 is not a multiple of the 2 heads")) << e.what();
  }
}

}  // namespace
}  // namespace sa
