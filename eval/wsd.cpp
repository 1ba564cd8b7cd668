#include "eval/wsd.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "data/corpus.h"
#include "eval/alignment.h"
#include "layers/encoder.h"

namespace sa {

void WsdLayer::check(int n_layers) const {
  if (spec == "top" || spec == "average" || spec == "concat") return;
  bool ok = !spec.empty() && std::all_of(spec.begin(), spec.end(), ::isdigit) && std::stoi(spec) <= n_layers;
  SA_CHECK(ok, "--layer {}: expected 0..{} (0 = token layer), top, average or concat", spec, n_layers);
}

Tensor WsdLayer::select(const Tensor& e) const {
  const int64_t L = e.dim(0), n = e.dim(1), D = e.dim(2);
  auto layer = [&](int64_t l) { return ops::reshape(ops::slice(e, 0, l, l + 1), {n, D}); };
  if (spec == "top") return layer(L - 1);
  if (spec == "average") return ops::mean(e, 0);
  if (spec == "concat") {
    std::vector<Tensor> all;
    for (int64_t l = 0; l < L; ++l) all.push_back(layer(l));
    return ops::concat(all, 1);
  }
  return layer(std::stoi(spec));
}

InstanceVectors embed_instances(const ContextualEncoder& encoder, const WsdCorpus& corpus, const EmbedOptions& o) {
  o.layer.check(encoder.n_layers() - 1);
  // The words of the sentences with instances, and per instance its span of words.
  std::vector<std::vector<std::string>> sentences;
  std::vector<std::vector<std::pair<int, int>>> spans;  // [first word, end) per instance, in output order
  InstanceVectors out;
  for (const WsdSentence& s : corpus.sentences) {
    std::vector<std::string> words;
    std::vector<std::pair<int, int>> own;
    for (const WsdToken& t : s.tokens) {
      const int begin = static_cast<int>(words.size());
      if (o.mwe_one_token) {
        std::string w = t.surface;
        std::replace(w.begin(), w.end(), '_', ' ');
        if (o.lowercase) lowercase_ascii(w);
        words.push_back(std::move(w));
      } else {
        for (std::string w : surface_words(t.surface)) {
          if (o.lowercase) lowercase_ascii(w);
          words.push_back(std::move(w));
        }
      }
      if (t.id.empty()) continue;
      own.emplace_back(begin, static_cast<int>(words.size()));
      out.ids.push_back(t.id);
      out.lemma_pos.push_back(lemma_pos_index(t.lemma, t.pos));
    }
    if (own.empty()) continue;
    sentences.push_back(std::move(words));
    spans.push_back(std::move(own));
  }
  SA_CHECK(!sentences.empty(), "{}: no instances to embed", o.label);
  std::vector<size_t> first(spans.size());  // output index of each sentence's first instance
  for (size_t i = 1; i < spans.size(); ++i) first[i] = first[i - 1] + spans[i - 1].size();
  std::vector<float> vec;
  int64_t D = -1;
  embed_all(encoder, sentences, o.batch_size, "embedding " + o.label, [&](size_t i, const Tensor& emb) {
    Tensor x = o.layer.select(emb).to(Device::cpu());
    if (D < 0) D = x.dim(1), vec.assign(out.ids.size() * static_cast<size_t>(D), 0.f);
    const std::vector<double> v = x.values();
    for (size_t k = 0; k < spans[i].size(); ++k) {
      float* dst = &vec[(first[i] + k) * static_cast<size_t>(D)];
      const auto [w0, w1] = spans[i][k];
      for (int w = w0; w < w1; ++w)
        for (int64_t j = 0; j < D; ++j) dst[j] += static_cast<float>(v[static_cast<size_t>(w * D + j)] / (w1 - w0));
    }
  });
  out.vectors = Tensor::from(vec, {static_cast<int64_t>(out.ids.size()), D});
  return out;
}

InstanceVectors layer_of_concat(const InstanceVectors& concat, const WsdLayer& layer, int64_t n_layers) {
  layer.check(static_cast<int>(n_layers) - 1);
  const int64_t N = concat.vectors.dim(0), D = concat.vectors.dim(1) / n_layers;
  SA_CHECK(D * n_layers == concat.vectors.dim(1), "layer_of_concat: {} columns are not {} layers", concat.vectors.dim(1),
           n_layers);
  // The [N, L*D] rows as the [L, N, D] embedding WsdLayer::select reads.
  const Tensor stacked = ops::permute(ops::reshape(concat.vectors, {N, n_layers, D}), {1, 0, 2});
  InstanceVectors out{concat.ids, concat.lemma_pos, layer.select(stacked)};
  return out;
}

namespace {

std::vector<float> host_floats(const Tensor& t) {
  const float* p = t.to(DType::F32).to(Device::cpu()).data<float>();
  return std::vector<float>(p, p + t.numel());
}

}  // namespace

SenseCentroids sense_centroids(const InstanceVectors& train, const WsdKeys& keys) {
  const int64_t D = train.vectors.dim(1);
  const std::vector<float> x = host_floats(train.vectors);
  std::map<std::string, int> index;  // sorted keys: deterministic order
  for (size_t i = 0; i < train.ids.size(); ++i) {
    auto k = keys.find(train.ids[i]);
    SA_CHECK(k != keys.end(), "training instance {} has no gold key", train.ids[i]);
    for (const std::string& key : k->second) index.emplace(key, 0);
  }
  SenseCentroids c;
  for (auto& [key, slot] : index) slot = static_cast<int>(c.keys.size()), c.keys.push_back(key);
  std::vector<float> sum(c.keys.size() * static_cast<size_t>(D), 0.f);
  for (size_t i = 0; i < train.ids.size(); ++i)
    for (const std::string& key : keys.at(train.ids[i])) {
      float* dst = &sum[static_cast<size_t>(index[key]) * D];
      for (int64_t j = 0; j < D; ++j) dst[j] += x[i * D + j];
    }
  c.unit = unit_rows(Tensor::from(sum, {static_cast<int64_t>(c.keys.size()), D}));  // the mean's direction is the sum's
  for (size_t k = 0; k < c.keys.size(); ++k)
    c.by_lemma_pos[lemma_pos_index(sense_key_lemma(c.keys[k]), sense_key_pos(c.keys[k]))].push_back(static_cast<int>(k));
  for (const std::string& lp : train.lemma_pos) c.lemmas.insert(lp.substr(0, lp.rfind('#')));
  return c;
}

WsdPrediction predict_nearest(const SenseCentroids& c, const InstanceVectors& test, const NearestOptions& o) {
  NoGrad ng;
  const int64_t D = c.unit.dim(1), N = static_cast<int64_t>(test.ids.size()), K = c.unit.dim(0);
  SA_CHECK(test.vectors.dim(1) == D, "test vectors have {} dimensions, the sense centroids {}", test.vectors.dim(1), D);
  const std::vector<float> x = host_floats(unit_rows(test.vectors));
  const std::vector<float> u = host_floats(c.unit);
  WsdPrediction p;
  std::vector<int> best(static_cast<size_t>(N), -1);
  if (o.filter_lemma) {
    for (int64_t n = 0; n < N; ++n) {
      auto it = c.by_lemma_pos.find(test.lemma_pos[n]);
      if (it == c.by_lemma_pos.end()) continue;
      double best_sim = -INFINITY;
      for (int k : it->second) {
        double dot = 0;
        for (int64_t j = 0; j < D; ++j) dot += double(x[n * D + j]) * u[k * D + j];
        if (dot > best_sim) best_sim = dot, best[n] = k;  // ties: the first key in sorted order
      }
    }
  } else {
    // Cosines with every sense entry: one GEMM per chunk of test vectors.
    Tensor ut = ops::transpose(c.unit, 0, 1).clone();  // [D, K]
    const int64_t chunk = 256;
    for (int64_t n0 = 0; n0 < N; n0 += chunk) {
      const int64_t n1 = std::min(N, n0 + chunk);
      std::vector<float> xs(x.begin() + n0 * D, x.begin() + n1 * D);
      Tensor sims = ops::matmul(Tensor::from(xs, {n1 - n0, D}), ut);
      const float* s = sims.data<float>();
      for (int64_t n = n0; n < n1; ++n) {
        const float* row = s + (n - n0) * K;
        best[n] = static_cast<int>(std::max_element(row, row + K) - row);
      }
    }
  }
  for (int64_t n = 0; n < N; ++n) {
    const std::string& lp = test.lemma_pos[n];
    const size_t hash = lp.rfind('#');
    const bool known = o.filter_lemma ? c.by_lemma_pos.count(lp) > 0 : c.lemmas.count(lp.substr(0, hash)) > 0;
    if (!known && o.backoff) {
      std::string first = o.backoff->first_sense(lp.substr(0, hash), lp.substr(hash + 1));
      if (!first.empty()) {
        p.keys[test.ids[n]] = {first};
        ++p.backed_off;
        continue;
      }
    }
    if (best[n] >= 0) p.keys[test.ids[n]] = {c.keys[best[n]]};
    else ++p.unanswered;
  }
  return p;
}

namespace {

template <typename F>
void for_each_instance(const WsdCorpus& c, F f) {
  for (const WsdSentence& s : c.sentences)
    for (const WsdToken& t : s.tokens)
      if (!t.id.empty()) f(t);
}

}  // namespace

WsdPrediction predict_mfs(const WsdKeys& train_keys, const WsdCorpus& test, const WordNetSenses* wn,
                          const WordNetSenses* backoff) {
  std::unordered_map<std::string, std::map<std::string, int>> counts;  // lemma#POS -> key -> count
  for (const auto& [id, keys] : train_keys)
    for (const std::string& k : keys) counts[lemma_pos_index(sense_key_lemma(k), sense_key_pos(k))][k]++;
  WsdPrediction p;
  for_each_instance(test, [&](const WsdToken& t) {
    auto it = counts.find(lemma_pos_index(t.lemma, t.pos));
    if (it != counts.end()) {
      // Most frequent; ties to WordNet's lower sense number, then the spelling (map order).
      const std::string* best = nullptr;
      int best_n = -1, best_rank = 0;
      for (const auto& [k, n] : it->second) {
        const int rank = wn ? wn->sense_number(k) : 0;
        const int r = rank > 0 ? rank : 1 << 30;
        if (n > best_n || (n == best_n && r < best_rank)) best = &k, best_n = n, best_rank = r;
      }
      p.keys[t.id] = {*best};
      return;
    }
    std::string first = backoff ? backoff->first_sense(t.lemma, t.pos) : "";
    if (!first.empty()) p.keys[t.id] = {first}, ++p.backed_off;
    else ++p.unanswered;
  });
  return p;
}

WsdPrediction predict_first_sense(const WsdCorpus& test, const WordNetSenses& wn) {
  WsdPrediction p;
  for_each_instance(test, [&](const WsdToken& t) {
    std::string first = wn.first_sense(t.lemma, t.pos);
    if (!first.empty()) p.keys[t.id] = {first};
    else ++p.unanswered;
  });
  return p;
}

}  // namespace sa
