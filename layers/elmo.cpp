#include "layers/elmo.h"

#include <cmath>
#include <cstring>
#include <random>
#include <span>
#include <string_view>

#include "data/char_ids.h"
#include "data/hdf5_file.h"

namespace sa {

namespace {

std::string lstm_name(int dir, int layer, const char* what) {
  return "RNN_" + std::to_string(dir) + "/RNN/MultiRNNCell/Cell" + std::to_string(layer) + "/LSTMCell/" + what;
}

// Allocates every parameter (uninitialized) with the shapes the options give.
ElmoModel allocate(const ElmoOptions& o, Device dev, DType dt) {
  ElmoModel m;
  m.opt = o;
  auto t = [&](Shape s) { return Tensor::empty(s, dt, dev); };
  const int64_t C = o.char_dim, F = o.n_filters(), P = o.projection_dim, D = o.lstm_dim;
  m.char_embed = t({chars::kTrainingChars, C});
  for (auto [w, n] : o.filters) {
    m.cnn_w.push_back(t({w, C, n}));
    m.cnn_b.push_back(t({n}));
  }
  for (int k = 0; k < o.n_highway; ++k) m.highway.push_back({t({F, F}), t({F}), t({F, F}), t({F})});
  if (o.use_proj()) {
    m.proj_w = t({F, P});
    m.proj_b = t({P});
  }
  for (int d = 0; d < 2; ++d)
    for (int l = 0; l < o.n_layers; ++l) m.lstm[d].push_back({t({P + P, 4 * D}), t({4 * D}), t({D, P})});
  return m;
}

}  // namespace

std::vector<NamedTensor> ElmoModel::named() {
  std::vector<NamedTensor> v;
  v.push_back({"char_embed", &char_embed});
  for (size_t i = 0; i < cnn_w.size(); ++i) {
    v.push_back({"CNN/W_cnn_" + std::to_string(i), &cnn_w[i]});
    v.push_back({"CNN/b_cnn_" + std::to_string(i), &cnn_b[i]});
  }
  for (size_t k = 0; k < highway.size(); ++k) {
    std::string g = "CNN_high_" + std::to_string(k) + "/";
    v.push_back({g + "W_carry", &highway[k].W_carry});
    v.push_back({g + "b_carry", &highway[k].b_carry});
    v.push_back({g + "W_transform", &highway[k].W_transform});
    v.push_back({g + "b_transform", &highway[k].b_transform});
  }
  if (proj_w.defined()) {
    v.push_back({"CNN_proj/W_proj", &proj_w});
    v.push_back({"CNN_proj/b_proj", &proj_b});
  }
  for (int d = 0; d < 2; ++d)
    for (size_t l = 0; l < lstm[d].size(); ++l) {
      v.push_back({lstm_name(d, static_cast<int>(l), "W_0"), &lstm[d][l].W});
      v.push_back({lstm_name(d, static_cast<int>(l), "B"), &lstm[d][l].B});
      v.push_back({lstm_name(d, static_cast<int>(l), "W_P_0"), &lstm[d][l].W_P});
    }
  return v;
}

std::vector<Tensor> tensors_of(const std::vector<NamedTensor>& named) {
  std::vector<Tensor> p;
  for (const NamedTensor& nt : named) p.push_back(*nt.tensor);
  return p;
}

std::vector<Tensor> ElmoModel::params() { return tensors_of(named()); }

ElmoModel ElmoModel::init(const ElmoOptions& o, uint64_t seed, Device dev, DType dt) {
  ElmoModel m = allocate(o, Device::cpu(), DType::F64);
  std::mt19937_64 rng(seed);
  auto fill = [&](Tensor& t, auto dist) {
    double* p = t.data<double>();
    for (int64_t i = 0; i < t.numel(); ++i) p[i] = dist(rng);
  };
  using U = std::uniform_real_distribution<double>;
  using N = std::normal_distribution<double>;
  const double F = o.n_filters();
  fill(m.char_embed, U(-1, 1));
  for (size_t i = 0; i < m.cnn_w.size(); ++i) {
    if (o.activation == "relu")
      fill(m.cnn_w[i], U(-0.05, 0.05));
    else
      fill(m.cnn_w[i], N(0, std::sqrt(1.0 / (o.filters[i].first * o.char_dim))));
    backend(Device::cpu()).fill(m.cnn_b[i], 0);
  }
  for (auto& h : m.highway) {
    fill(h.W_carry, N(0, std::sqrt(1.0 / F)));
    fill(h.W_transform, N(0, std::sqrt(1.0 / F)));
    backend(Device::cpu()).fill(h.b_carry, -2.0);
    backend(Device::cpu()).fill(h.b_transform, 0.0);
  }
  if (o.use_proj()) {
    fill(m.proj_w, N(0, std::sqrt(1.0 / F)));
    backend(Device::cpu()).fill(m.proj_b, 0.0);
  }
  for (int d = 0; d < 2; ++d)
    for (auto& l : m.lstm[d]) {  // TF default: Glorot uniform
      auto glorot = [](const Tensor& t) { return std::sqrt(6.0 / static_cast<double>(t.dim(0) + t.dim(1))); };
      fill(l.W, U(-glorot(l.W), glorot(l.W)));
      fill(l.W_P, U(-glorot(l.W_P), glorot(l.W_P)));
      backend(Device::cpu()).fill(l.B, 0.0);
    }
  return m.to(dev, dt);
}

ElmoModel ElmoModel::load_bilm(const ElmoOptions& o, const std::string& path, Device dev, DType dt) {
  ElmoModel m = allocate(o, Device::cpu(), DType::F32);
  H5File f = H5File::open(path);
  for (NamedTensor& nt : m.named()) {
    Tensor v = f.read(nt.name);
    // A char_embed with the inference padding row first (262 rows): drop that row.
    if (nt.name == "char_embed" && v.rank() == 2 && v.dim(0) == chars::kInferenceChars) v = v.rows(1, v.dim(0));
    SA_CHECK(v.numel() == nt.tensor->numel(), "{}: dataset '{}' has shape {} but the options need {}", path, nt.name,
             to_string(v.shape()), to_string(nt.tensor->shape()));
    nt.tensor->copy_from(v.view(nt.tensor->shape()));
  }
  return m.to(dev, dt);
}

void ElmoModel::save_bilm(const std::string& path) const {
  ElmoModel m = to(Device::cpu(), DType::F32);
  write_hdf5_atomically(path, [&](H5File& f) {
    for (NamedTensor& nt : m.named()) {
      Tensor t = *nt.tensor;
      if (nt.name.rfind("CNN/W_cnn_", 0) == 0) t = t.view({1, t.dim(0), t.dim(1), t.dim(2)});  // TF conv2d layout
      f.write(nt.name, t);
    }
    if (!m.proj_w.defined()) {  // AllenNLP always reads a projection: write the identity
      const int64_t F = opt.n_filters();
      std::vector<float> eye(static_cast<size_t>(F * F), 0.f);
      for (int64_t i = 0; i < F; ++i) eye[i * F + i] = 1.f;
      f.write("CNN_proj/W_proj", Tensor::from(eye, {F, F}));
      f.write("CNN_proj/b_proj", Tensor::zeros({F}));
    }
  });
}

ElmoModel ElmoModel::to(Device dev, DType dt) const {
  ElmoModel m = *this;
  for (NamedTensor& nt : m.named()) {
    Tensor c = nt.tensor->to(dt).to(dev);
    *nt.tensor = c.same(*nt.tensor) ? c.clone() : c;  // never share storage with the source
  }
  return m;
}

Tensor ElmoModel::encode(const Tensor& ids) const {
  SA_CHECK(ids.dim(-1) == chars::kPerToken, "encode: char ids {} must end in {}", describe(ids), chars::kPerToken);
  Shape lead = ids.shape();
  lead.pop_back();
  const int64_t n = ids.numel() / chars::kPerToken;
  Tensor emb = ops::gather_rows(char_embed, ops::reshape(ids, {n, chars::kPerToken}));  // [n, 50, C]
  std::vector<Tensor> convs;
  for (size_t i = 0; i < cnn_w.size(); ++i) {
    Tensor c = ops::conv1d_max(emb, cnn_w[i], cnn_b[i]);  // bias before the max, activation after
    convs.push_back(opt.activation == "relu" ? ops::relu(c) : ops::tanh(c));
  }
  Tensor x = convs.size() == 1 ? convs[0] : ops::concat(convs, 1);
  for (const HighwayWeights& h : highway)
    x = ops::highway(ops::linear(x, h.W_carry, h.b_carry), ops::linear(x, h.W_transform, h.b_transform), x);
  if (proj_w.defined()) x = ops::linear(x, proj_w, proj_b);
  lead.push_back(x.dim(1));
  return ops::reshape(x, lead);
}

int64_t DistinctTokens::count() const { return static_cast<int64_t>(chars.size()) / chars::kPerToken; }

namespace {
// A token's char ids hashed through its end-of-word id: what follows is padding, and hashing all
// 200 bytes a token was most of the de-duplication's time.
uint64_t token_hash(const int32_t* ids) {
  int n = 0;
  while (n < chars::kPerToken && ids[n++] != chars::kEow) {
  }
  return std::hash<std::string_view>()(std::string_view(reinterpret_cast<const char*>(ids), n * sizeof(int32_t)));
}
}  // namespace

DistinctTokens distinct_tokens(std::initializer_list<std::span<const int32_t>> parts) {
  size_t n = 0;
  for (std::span<const int32_t> p : parts) {
    SA_CHECK(p.size() % chars::kPerToken == 0, "encode: {} char ids is not a whole number of {}-char tokens", p.size(),
             chars::kPerToken);
    n += p.size() / chars::kPerToken;
  }
  // Open addressing in a flat table at most half full (no node per token), rows compared whole.
  size_t cap = 16;
  while (cap < 2 * n) cap *= 2;
  std::vector<int32_t> slot(cap, -1);
  DistinctTokens t;
  t.index.reserve(n);
  for (std::span<const int32_t> p : parts)
    for (size_t at = 0; at < p.size(); at += chars::kPerToken) {
      const int32_t* row = p.data() + at;
      size_t h = token_hash(row) & (cap - 1);
      while (slot[h] >= 0 && std::memcmp(row, t.chars.data() + static_cast<size_t>(slot[h]) * chars::kPerToken,
                                         chars::kPerToken * sizeof(int32_t)) != 0)
        h = (h + 1) & (cap - 1);
      if (slot[h] < 0) {
        slot[h] = static_cast<int32_t>(t.count());
        t.chars.insert(t.chars.end(), row, row + chars::kPerToken);
      }
      t.index.push_back(slot[h]);
    }
  return t;
}

void pad_distinct_tokens(DistinctTokens& t, int64_t bucket) {
  if (bucket <= 0 || t.count() == 0) return;
  const int64_t n = static_cast<int64_t>(t.index.size());
  const int64_t padded = std::min((t.count() + bucket - 1) / bucket * bucket, n);
  const std::vector<int32_t> first(t.chars.begin(), t.chars.begin() + chars::kPerToken);
  t.chars.reserve(static_cast<size_t>(padded) * chars::kPerToken);
  for (int64_t r = t.count(); r < padded; ++r) t.chars.insert(t.chars.end(), first.begin(), first.end());
}

DistinctTokens distinct_tokens(const std::vector<int32_t>& char_ids) { return distinct_tokens({std::span(char_ids)}); }

Tensor ElmoModel::encode_tokens(const std::vector<int32_t>& char_ids, const Shape& lead, int64_t* distinct) const {
  const DistinctTokens t = distinct_tokens(char_ids);
  if (distinct) *distinct = t.count();
  return encode_distinct(t, lead);
}

Tensor ElmoModel::encode_distinct(const DistinctTokens& t, const Shape& lead) const {
  SA_CHECK(static_cast<int64_t>(t.index.size()) == numel(lead), "encode: {} tokens for the shape {}", t.index.size(),
           to_string(lead));
  Tensor vecs = encode(Tensor::from(t.chars, {t.count(), chars::kPerToken}, device()));  // [u, P]
  return ops::gather_rows(vecs, Tensor::from(t.index, lead, device()));
}

}  // namespace sa
