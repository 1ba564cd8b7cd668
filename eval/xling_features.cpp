#include "eval/xling_features.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "data/corpus.h"
#include "data/hdf5_file.h"

namespace sa {

std::string LayerSpec::name() const {
  switch (kind) {
    case Kind::Concat: return "concat";
    case Kind::Average: return "average";
    case Kind::Top: return "top";
    case Kind::One: return std::to_string(layer);
  }
  return "?";
}

LayerSpec parse_layer_spec(const std::string& s, int n_layers) {
  LayerSpec l;
  if (s == "concat") return l;
  if (s == "average") return l.kind = LayerSpec::Kind::Average, l;
  if (s == "top") return l.kind = LayerSpec::Kind::Top, l;
  l.kind = LayerSpec::Kind::One;
  size_t used = 0;
  try {
    l.layer = std::stoi(s, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  SA_CHECK(used == s.size() && !s.empty() && l.layer >= 0 && l.layer < n_layers,
           "--layers: \"{}\" is not concat, average, top or a layer index 0..{}", s, n_layers - 1);
  return l;
}

Tensor select_layers(const Tensor& e, const LayerSpec& spec) {
  NoGrad ng;
  const int64_t L = e.dim(0), n = e.dim(1), D = e.dim(2);
  switch (spec.kind) {
    case LayerSpec::Kind::Concat: return ops::reshape(ops::permute(e, {1, 0, 2}), {n, L * D});
    case LayerSpec::Kind::Average: return ops::mean(e, 0);
    case LayerSpec::Kind::Top: return ops::reshape(ops::slice(e, 0, L - 1, L), {n, D});
    case LayerSpec::Kind::One: return ops::reshape(ops::slice(e, 0, spec.layer, spec.layer + 1), {n, D});
  }
  return Tensor();
}

int64_t feature_dim(const LayerSpec& spec, int n_layers, int64_t dim) {
  return spec.kind == LayerSpec::Kind::Concat ? n_layers * dim : dim;
}

std::vector<int64_t> sentence_offsets(const Sentences& sentences) {
  std::vector<int64_t> off = {0};
  for (const auto& s : sentences) off.push_back(off.back() + static_cast<int64_t>(s.size()));
  return off;
}

Tensor token_features(const ContextualEncoder& encoder, const Sentences& sentences, const LayerSpec& spec,
                      const std::string& label) {
  Sentences tokens = sentences;
  if (encoder.lowercase)
    for (auto& s : tokens)
      for (std::string& w : s) lowercase_ascii(w);
  const std::vector<int64_t> off = sentence_offsets(tokens);
  const int64_t D = feature_dim(spec, encoder.n_layers(), encoder.dim());
  std::vector<float> out(static_cast<size_t>(off.back() * D));
  embed_all(encoder, tokens, 32, label, [&](size_t i, const Tensor& e) {
    const std::vector<double> v = select_layers(e, spec).values();
    std::copy(v.begin(), v.end(), out.begin() + off[i] * D);
  });
  return Tensor::from(out, {off.back(), D});
}

Tensor regrouped_token_features(const ContextualEncoder& encoder, const Sentences& sentences, const CjkLexicon& lexicon,
                                const LayerSpec& spec, const std::string& label) {
  Sentences words;
  std::vector<int32_t> rows;  // each token's row among the words' vectors
  int64_t first = 0;
  for (const auto& s : sentences) {
    RegroupedTokens r = regroup_cjk_characters(s, lexicon);
    for (int32_t w : r.word_of) rows.push_back(static_cast<int32_t>(first + w));
    first += static_cast<int64_t>(r.words.size());
    words.push_back(std::move(r.words));
  }
  NoGrad ng;
  return ops::gather_rows(token_features(encoder, words, spec, label),
                          Tensor::from(rows, {static_cast<int64_t>(rows.size())}));
}

double cjk_character_share(const Sentences& sentences) {
  int64_t cjk = 0, all = 0;
  for (const auto& s : sentences)
    for (const std::string& t : s) cjk += is_cjk_character(t), ++all;
  return all ? static_cast<double>(cjk) / static_cast<double>(all) : 0.0;
}

namespace {

SentenceBatch sentence_batch(const Tensor& features, const std::vector<int64_t>& offsets, const std::vector<size_t>& rows,
                             const std::vector<std::vector<int32_t>>* tag_ids, Device dev, bool padded) {
  const int64_t D = features.dim(1), B = static_cast<int64_t>(rows.size());
  SA_CHECK(features.rank() == 2 && !features.device().is_cuda() && offsets.back() == features.dim(0),
           "sentence batch: features {} for {} tokens", describe(features), offsets.back());
  SentenceBatch b;
  int64_t T = 1, N = 0;
  for (size_t r : rows) {
    b.lengths.push_back(static_cast<int>(offsets[r + 1] - offsets[r]));
    T = std::max<int64_t>(T, b.lengths.back());
    N += b.lengths.back();
  }
  std::vector<float> x(static_cast<size_t>((padded ? B * T : N) * D), 0.f);
  std::vector<int32_t> tags(static_cast<size_t>(B * T), 0);
  const float* f = features.data<float>();
  auto out = x.begin();
  for (int64_t i = 0; i < B; ++i) {
    const size_t r = rows[static_cast<size_t>(i)];
    std::copy(f + offsets[r] * D, f + offsets[r + 1] * D, padded ? x.begin() + i * T * D : out);
    out += (offsets[r + 1] - offsets[r]) * D;
    if (tag_ids) std::copy((*tag_ids)[r].begin(), (*tag_ids)[r].end(), tags.begin() + i * T);
  }
  b.x = padded ? Tensor::from(x, {B, T, D}, dev) : Tensor::from(x, {N, D}, dev);
  if (tag_ids) b.tags = Tensor::from(tags, {B, T}, dev);
  return b;
}

}  // namespace

SentenceBatch padded_batch(const Tensor& features, const std::vector<int64_t>& offsets, const std::vector<size_t>& rows,
                           const std::vector<std::vector<int32_t>>* tag_ids, Device dev) {
  return sentence_batch(features, offsets, rows, tag_ids, dev, true);
}

SentenceBatch packed_batch(const Tensor& features, const std::vector<int64_t>& offsets, const std::vector<size_t>& rows,
                           const std::vector<std::vector<int32_t>>* tag_ids, Device dev) {
  return sentence_batch(features, offsets, rows, tag_ids, dev, false);
}

Tensor cached_tensor(const std::string& dir, uint64_t key, const std::string& what, Device dev,
                     const std::function<Tensor()>& compute, int64_t rows) {
  if (dir.empty()) return compute().to(dev);
  char name[32];
  std::snprintf(name, sizeof name, "%016llx.hdf5", static_cast<unsigned long long>(key));
  const std::string path = (std::filesystem::path(dir) / name).string();
  if (std::filesystem::exists(path)) {
    Tensor t = H5File::open(path).read("features");
    if (rows < 0 || (t.rank() >= 1 && t.dim(0) == rows)) {
      std::fprintf(stderr, "%s: cached in %s\n", what.c_str(), path.c_str());
      return t.to(dev);
    }
    std::fprintf(stderr, "%s: %s holds %ld rows, not %ld: computing again\n", what.c_str(), path.c_str(),
                 static_cast<long>(t.dim(0)), static_cast<long>(rows));
  }
  Tensor t = compute();
  std::filesystem::create_directories(dir);
  write_hdf5_atomically(path, [&](H5File& f) { f.write("features", t.to(Device::cpu())); });
  return t.to(dev);
}

}  // namespace sa
