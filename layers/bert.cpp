#include "layers/bert.h"

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "data/atomic_file.h"
#include "data/json_path.h"
#include "data/safetensors.h"

namespace sa {

namespace {

// The configured GELU.
Tensor gelu_of(const BertConfig& c, const Tensor& x) { return c.exact_gelu ? ops::gelu_erf(x) : ops::gelu(x); }

// x [N, in] times W [out, in] (Hugging Face's layout) plus b [out].
Tensor dense(const Tensor& x, const Tensor& W, const Tensor& b) { return ops::add(ops::matmul(x, W, false, true), b); }

Tensor maybe_dropout(const Tensor& x, double p, Generator* gen) { return gen ? ops::dropout(x, p, *gen) : x; }

BertModel allocate(const BertConfig& c, Device dev, DType dt) {
  BertModel m;
  m.config = c;
  auto t = [&](Shape s) { return Tensor::empty(s, dt, dev); };
  const int64_t H = c.hidden, I = c.intermediate;
  m.word_emb = t({c.vocab_size, H}), m.pos_emb = t({c.max_positions, H}), m.type_emb = t({c.type_vocab, H});
  m.emb_ln_g = t({H}), m.emb_ln_b = t({H});
  for (int i = 0; i < c.layers; ++i)
    m.layer.push_back({t({3 * H, H}), t({3 * H}), t({H, H}), t({H}), t({H}), t({H}), t({I, H}), t({I}), t({H, I}), t({H}),
                       t({H}), t({H})});
  m.mlm_w = t({H, H}), m.mlm_b = t({H}), m.mlm_ln_g = t({H}), m.mlm_ln_b = t({H}), m.mlm_bias = t({c.vocab_size});
  return m;
}

bool is_layer_norm_gain(const std::string& name) { return name.find("LayerNorm.weight") != std::string::npos; }
bool is_bias(const std::string& name) {
  return name.size() >= 4 && (name.compare(name.size() - 4, 4, "bias") == 0);
}

}  // namespace

void BertConfig::check(const std::string& origin) const {
  SA_CHECK(vocab_size > 0 && hidden > 0 && layers > 0 && heads > 0 && intermediate > 0 && max_positions > 0 &&
               type_vocab > 0,
           "{}: BERT sizes must be positive (vocab {}, hidden {}, layers {}, heads {}, intermediate {}, positions {}, "
           "types {})",
           origin, vocab_size, hidden, layers, heads, intermediate, max_positions, type_vocab);
  SA_CHECK(hidden % heads == 0, "{}: hidden size {} is not a multiple of the {} heads", origin, hidden, heads);
}

BertConfig BertConfig::from_hf_json(const std::string& path) {
  std::ifstream in(path);
  SA_CHECK(in.good(), "{}: cannot open", path);
  BertConfig c;
  try {
    const nlohmann::json j = nlohmann::json::parse(in);
    SA_CHECK(j.value("model_type", std::string("bert")) == "bert", "{}: model_type is '{}', expected 'bert'", path,
             j.value("model_type", std::string()));
    const std::string act = j.value("hidden_act", std::string("gelu"));
    SA_CHECK(act == "gelu" || act == "gelu_new" || act == "gelu_pytorch_tanh",
             "{}: hidden_act '{}' is not supported (GELU only)", path, act);
    SA_CHECK(j.value("position_embedding_type", std::string("absolute")) == "absolute",
             "{}: only absolute position embeddings are supported", path);
    c.exact_gelu = act == "gelu";
    c.visit([&](const char*, auto& field, const char* key, const auto& missing) {
      SA_CHECK(j.contains(key) || missing, "{}: invalid BERT config: {} is missing", path, key);
      const std::string what = fmt::format("{}: invalid BERT config: {}", path, key);
      field = j.contains(key) ? json_as<std::decay_t<decltype(field)>>(j.at(key), what) : *missing;
    });
  } catch (const nlohmann::json::exception& e) {
    fail("{}: invalid BERT config: {}", path, e.what());
  }
  c.check(path);
  return c;
}

void BertConfig::save_hf_json(const std::string& path, bool masked_lm) const {
  nlohmann::json j = {{"architectures", {masked_lm ? "BertForMaskedLM" : "BertModel"}},
                      {"model_type", "bert"},
                      {"hidden_act", exact_gelu ? "gelu" : "gelu_new"},
                      {"initializer_range", 0.02},
                      {"pad_token_id", 0},
                      {"position_embedding_type", "absolute"},
                      {"tie_word_embeddings", true}};
  const_cast<BertConfig&>(*this).visit([&](const char*, const auto& field, const char* key, const auto&) { j[key] = field; });
  write_file_atomically(path, j.dump(2) + "\n");
}

std::vector<NamedTensor> BertModel::named() {
  std::vector<NamedTensor> v = {{"bert.embeddings.word_embeddings.weight", &word_emb},
                                {"bert.embeddings.position_embeddings.weight", &pos_emb},
                                {"bert.embeddings.token_type_embeddings.weight", &type_emb},
                                {"bert.embeddings.LayerNorm.weight", &emb_ln_g},
                                {"bert.embeddings.LayerNorm.bias", &emb_ln_b}};
  for (size_t i = 0; i < layer.size(); ++i) {
    const std::string p = "bert.encoder.layer." + std::to_string(i) + ".";
    BertLayer& l = layer[i];
    for (auto [n, t] : std::initializer_list<std::pair<const char*, Tensor*>>{
             {"attention.self.qkv.weight", &l.qkv_w}, {"attention.self.qkv.bias", &l.qkv_b},
             {"attention.output.dense.weight", &l.attn_out_w}, {"attention.output.dense.bias", &l.attn_out_b},
             {"attention.output.LayerNorm.weight", &l.attn_ln_g}, {"attention.output.LayerNorm.bias", &l.attn_ln_b},
             {"intermediate.dense.weight", &l.ff_in_w}, {"intermediate.dense.bias", &l.ff_in_b},
             {"output.dense.weight", &l.ff_out_w}, {"output.dense.bias", &l.ff_out_b},
             {"output.LayerNorm.weight", &l.ff_ln_g}, {"output.LayerNorm.bias", &l.ff_ln_b}})
      v.push_back({p + n, t});
  }
  v.push_back({"cls.predictions.transform.dense.weight", &mlm_w});
  v.push_back({"cls.predictions.transform.dense.bias", &mlm_b});
  v.push_back({"cls.predictions.transform.LayerNorm.weight", &mlm_ln_g});
  v.push_back({"cls.predictions.transform.LayerNorm.bias", &mlm_ln_b});
  v.push_back({"cls.predictions.bias", &mlm_bias});
  return v;
}

std::vector<Tensor> BertModel::params() { return tensors_of(named()); }

BertModel BertModel::init(const BertConfig& c, uint64_t seed, Device dev, DType dt) {
  c.check("BERT config");
  BertModel m = allocate(c, Device::cpu(), DType::F64);
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 0.02);
  for (NamedTensor& nt : m.named()) {
    double* p = nt.tensor->data<double>();
    const double constant = is_layer_norm_gain(nt.name) ? 1.0 : 0.0;
    const bool random = !is_layer_norm_gain(nt.name) && !is_bias(nt.name);
    for (int64_t i = 0; i < nt.tensor->numel(); ++i) p[i] = random ? normal(rng) : constant;
  }
  BertModel out = m;
  for (NamedTensor& nt : out.named()) *nt.tensor = nt.tensor->to(dt).to(dev).clone();
  return out;
}

std::vector<std::pair<std::string, Tensor>> bert_hf_tensors(const BertModel& model) {
  BertModel& m = const_cast<BertModel&>(model);  // named() hands out pointers; nothing is written here
  std::vector<std::pair<std::string, Tensor>> out;
  const int64_t H = m.config.hidden;
  for (NamedTensor& nt : m.named()) {
    const size_t at = nt.name.find("attention.self.qkv.");
    if (at == std::string::npos) {
      out.emplace_back(nt.name, *nt.tensor);
      continue;
    }
    const std::string prefix = nt.name.substr(0, at) + "attention.self.", kind = nt.name.substr(at + 19);
    const char* parts[] = {"query", "key", "value"};
    for (int k = 0; k < 3; ++k) out.emplace_back(prefix + parts[k] + "." + kind, nt.tensor->rows(k * H, (k + 1) * H));
  }
  return out;
}

void BertModel::save_hf_weights(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& extra) const {
  std::vector<std::pair<std::string, Tensor>> t;
  for (auto& [name, tensor] : bert_hf_tensors(*this)) t.emplace_back(name, tensor.to(Device::cpu()).to(DType::F32).clone());
  for (auto& [name, tensor] : extra) t.emplace_back(name, tensor.to(Device::cpu()).to(DType::F32).clone());
  save_safetensors(path, t, {{"format", "pt"}});
}

BertModel BertModel::load_hf(const std::string& dir, Device dev, DType dt) {
  const BertConfig c = BertConfig::from_hf_json(dir + "/config.json");
  const std::string path = dir + "/model.safetensors";
  const SafetensorsFile f = load_safetensors(path);
  BertModel m = allocate(c, Device::cpu(), DType::F32);
  // Google's original checkpoints, converted, name LayerNorm parameters gamma and beta; a
  // checkpoint of the bare encoder (BertModel) has no "bert." prefix and no MLM head.
  auto find = [&](const std::string& name) {
    std::vector<std::string> names = {name};
    for (const auto& [ours, theirs] : {std::pair{"LayerNorm.weight", "LayerNorm.gamma"}, {"LayerNorm.bias", "LayerNorm.beta"}})
      if (name.ends_with(ours)) names.push_back(name.substr(0, name.size() - std::string(ours).size()) + theirs);
    for (size_t i = 0, n = names.size(); i < n; ++i)
      if (names[i].rfind("bert.", 0) == 0) names.push_back(names[i].substr(5));
    for (const std::string& k : names)
      if (auto it = f.tensors.find(k); it != f.tensors.end()) return it;
    return f.tensors.end();
  };
  bool head_missing = false;
  for (auto& [name, view] : bert_hf_tensors(m)) {
    auto it = find(name);
    if (it == f.tensors.end() && name.rfind("cls.", 0) == 0) {  // the encoder alone: the head stays at BERT's init
      head_missing = true;
      continue;
    }
    SA_CHECK(it != f.tensors.end(), "{}: tensor '{}' missing", path, name);
    SA_CHECK(it->second.shape() == view.shape(), "{}: tensor '{}' is {} but config.json needs {}", path, name,
             to_string(it->second.shape()), to_string(view.shape()));
    Tensor dst = view;  // a view into the model's tensor (query, key, value: rows of the fused matrix)
    dst.copy_from(it->second.to(DType::F32));
  }
  if (head_missing) {  // LayerNorm gains 1, the rest 0: an untrained head, harmless for embedding
    for (Tensor* t : {&m.mlm_w, &m.mlm_b, &m.mlm_ln_b, &m.mlm_bias}) backend(Device::cpu()).fill(*t, 0.0);
    backend(Device::cpu()).fill(m.mlm_ln_g, 1.0);
    m.has_mlm_head = false;
  }
  BertModel out = m;
  for (NamedTensor& nt : out.named()) *nt.tensor = nt.tensor->to(dt).to(dev).clone();
  return out;
}

std::vector<Tensor> BertModel::forward(const BertBatch& b, Generator* gen) const {
  const int64_t B = b.ids.dim(0), T = b.ids.dim(1), H = config.hidden, nh = config.heads, dh = config.head_dim();
  SA_CHECK(T <= config.max_positions, "BERT: sequence of {} tokens exceeds max_position_embeddings {}", T,
           config.max_positions);
  SA_CHECK(b.types.shape() == b.ids.shape() && b.mask.shape() == b.ids.shape(),
           "BERT: ids {}, segment ids {} and mask {} must have one shape", describe(b.ids), describe(b.types),
           describe(b.mask));
  const double eps = config.layer_norm_eps;
  Tensor x = ops::add(ops::add(ops::gather_rows(word_emb, b.ids), ops::reshape(ops::slice(pos_emb, 0, 0, T), {1, T, H})),
                      ops::gather_rows(type_emb, b.types));
  x = maybe_dropout(ops::layer_norm(x, emb_ln_g, emb_ln_b, eps), config.hidden_dropout, gen);
  std::vector<Tensor> outputs = {x};
  const double scale = 1.0 / std::sqrt(static_cast<double>(dh));
  for (const BertLayer& l : layer) {
    Tensor flat = ops::reshape(x, {B * T, H});
    Tensor qkv = ops::permute(ops::reshape(dense(flat, l.qkv_w, l.qkv_b), {B, T, 3, nh, dh}), {2, 0, 3, 1, 4});
    std::vector<Tensor> parts = ops::unbind(qkv);  // each [B, nh, T, dh]
    Tensor ctx = ops::attention(parts[0], parts[1], parts[2], b.mask, scale, gen ? config.attention_dropout : 0.0, gen);
    ctx = ops::reshape(ops::permute(ctx, {0, 2, 1, 3}), {B * T, H});
    Tensor a = maybe_dropout(dense(ctx, l.attn_out_w, l.attn_out_b), config.hidden_dropout, gen);
    Tensor y = ops::layer_norm(ops::add(a, flat), l.attn_ln_g, l.attn_ln_b, eps);
    Tensor f = maybe_dropout(dense(gelu_of(config, dense(y, l.ff_in_w, l.ff_in_b)), l.ff_out_w, l.ff_out_b),
                             config.hidden_dropout, gen);
    x = ops::reshape(ops::layer_norm(ops::add(f, y), l.ff_ln_g, l.ff_ln_b, eps), {B, T, H});
    outputs.push_back(x);
  }
  return outputs;
}

Tensor BertModel::mlm_transform(const Tensor& h) const {
  return ops::layer_norm(gelu_of(config, dense(h, mlm_w, mlm_b)), mlm_ln_g, mlm_ln_b, config.layer_norm_eps);
}

Tensor BertModel::mlm_logits(const Tensor& h) const {
  return ops::add(ops::matmul(mlm_transform(h), word_emb, false, true), mlm_bias);
}

namespace {
// Our checkpoint name, Hugging Face's.
constexpr std::pair<const char*, const char*> kSenseHfNames[] = {{"sense/0/W", "sense.output.weight"},
                                                                  {"sense/0/b", "sense.output.bias"},
                                                                  {"sense/0/centers", "sense.centers"},
                                                                  {"sense/0/enabled", "sense.enabled"},
                                                                  {"sense/0/projection", "sense.projection"}};
}  // namespace

std::vector<std::pair<std::string, Tensor>> hf_sense_tensors(const std::map<std::string, Tensor>& ours) {
  std::vector<std::pair<std::string, Tensor>> t;
  for (auto [name, theirs] : kSenseHfNames)
    if (auto it = ours.find(name); it != ours.end())
      t.emplace_back(theirs, it->second.rank() == 2 && it->second.dim(1) == 1 ? it->second.view({it->second.dim(0)})
                                                                              : it->second);
  return t;
}

}  // namespace sa
