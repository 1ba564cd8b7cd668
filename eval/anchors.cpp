#include "eval/anchors.h"

#include "data/input_limits.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <unordered_map>

#include "data/atomic_file.h"
#include "data/corpus.h"
#include "layers/encoder.h"

namespace sa {

int WordVectors::find(const std::string& w) const {
  if (index_.size() != words.size()) {
    index_.clear();
    for (size_t i = 0; i < words.size(); ++i) index_.emplace(words[i], static_cast<int>(i));
  }
  auto it = index_.find(w);
  return it == index_.end() ? -1 : it->second;
}

WordVectors read_word_vectors(const std::string& path) {
  std::ifstream f(path);
  SA_CHECK(f, "{}: cannot open word vectors", path);
  std::string line;
  int64_t n = 0, d = 0;
  SA_CHECK(std::getline(f, line) && (std::istringstream(line) >> n >> d) && n >= 0 && d > 0,
           "{}:1: expected the word2vec header \"n_words dim\"", path);
  check_stated_size(path, {n, d}, 2, "header \"n_words dim\"");
  WordVectors v;
  v.vectors = Matrix(n, d);
  // The header must agree with the rows: trusting it would silently drop columns or rows.
  for (int64_t r = 0; r < n; ++r) {
    SA_CHECK(std::getline(f, line), "{}: the header announces {} vectors, the file ends after {} rows", path, n, r);
    std::istringstream ss(line);
    std::vector<std::string> fields;
    for (std::string x; ss >> x;) fields.push_back(std::move(x));
    SA_CHECK(static_cast<int64_t>(fields.size()) == d + 1,
             "{}:{}: expected a word and {} numbers (the header's dimension), found {}", path, r + 2, d,
             fields.empty() ? std::string("an empty line") : fmt::format("a word and {} numbers", fields.size() - 1));
    for (int64_t k = 0; k < d; ++k) {
      const std::string& x = fields[static_cast<size_t>(k + 1)];
      char* end = nullptr;
      v.vectors(r, k) = std::strtod(x.c_str(), &end);
      SA_CHECK(end == x.c_str() + x.size(), "{}:{}: '{}' is not a number", path, r + 2, x);
    }
    v.words.push_back(fields[0]);
  }
  int64_t rows = n;
  for (std::string rest; std::getline(f, rest);) rows += rest.find_first_not_of(" \t\r") != std::string::npos;
  SA_CHECK(rows == n, "{}:{}: the header announces {} vectors, the file has {} rows", path, n + 2, n, rows);
  return v;
}

void write_word_vectors(const WordVectors& v, const std::string& path) {
  std::ostringstream f;
  f << v.vectors.rows << " " << v.vectors.cols << "\n";
  char buf[32];
  for (int64_t r = 0; r < v.vectors.rows; ++r) {
    f << v.words[static_cast<size_t>(r)];
    for (int64_t k = 0; k < v.vectors.cols; ++k) {
      std::snprintf(buf, sizeof buf, " %.7g", v.vectors(r, k));
      f << buf;
    }
    f << "\n";
  }
  write_file_atomically(path, f.str());
}

std::vector<WordVectors> average_anchors(const ContextualEncoder& encoder, const std::string& corpus, const AnchorOptions& o) {
  NoGrad ng;
  std::vector<Sentence> sents = read_sentences(corpus, o.lowercase);
  if (o.max_sentences > 0 && static_cast<int64_t>(sents.size()) > o.max_sentences) sents.resize(o.max_sentences);
  SA_CHECK(!sents.empty(), "{}: no sentences", corpus);
  std::unordered_map<std::string, int> id;
  std::vector<std::string> words;
  std::vector<int64_t> count;
  std::vector<std::vector<double>> sum;  // per layer, [word * D + k]
  const int L = encoder.n_layers();
  int64_t D = 0;
  embed_all(encoder, sents, o.batch_size, "anchors", [&](size_t i, const Tensor& emb) {
    if (D == 0) D = emb.dim(2), sum.assign(static_cast<size_t>(L), {});
    const std::vector<double> v = emb.values();  // [L, n, D]
    const int64_t n = static_cast<int64_t>(sents[i].size());
    for (int64_t t = 0; t < n; ++t) {
      auto [it, fresh] = id.emplace(sents[i][t], static_cast<int>(words.size()));
      if (fresh) {
        words.push_back(sents[i][t]), count.push_back(0);
        for (auto& s : sum) s.resize(s.size() + static_cast<size_t>(D), 0.0);
      }
      const size_t w = static_cast<size_t>(it->second);
      ++count[w];
      for (int l = 0; l < L; ++l)
        for (int64_t k = 0; k < D; ++k) sum[l][w * D + k] += v[static_cast<size_t>((l * n + t) * D + k)];
    }
  });
  // Words by descending count (ties by spelling), as vocabularies and MUSE files order them.
  std::vector<size_t> keep;
  for (size_t w = 0; w < words.size(); ++w)
    if (count[w] >= o.min_count) keep.push_back(w);
  std::sort(keep.begin(), keep.end(), [&](size_t a, size_t b) { return count[a] != count[b] ? count[a] > count[b] : words[a] < words[b]; });
  std::vector<WordVectors> layers(static_cast<size_t>(L));
  for (int l = 0; l < L; ++l) {
    WordVectors& out = layers[static_cast<size_t>(l)];
    out.vectors = Matrix(static_cast<int64_t>(keep.size()), D);
    for (size_t r = 0; r < keep.size(); ++r) {
      const size_t w = keep[r];
      out.words.push_back(words[w]);
      for (int64_t k = 0; k < D; ++k) out.vectors(static_cast<int64_t>(r), k) = sum[l][w * D + k] / count[w];
    }
  }
  return layers;
}

}  // namespace sa
