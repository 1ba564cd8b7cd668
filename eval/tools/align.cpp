// bin/align: projection alignment of two embedding spaces and bilingual lexicon induction.
//   bin/align anchors --model RUN --corpus FILE -o PREFIX     PREFIX.layer{0,1,2}.vec (mean vector per word)
//   bin/align fit --src A.vec --tgt B.vec --dict D.txt -o W.txt [--method lsq|procrustes] [--refine N]
//                 [--add-identical] [--dev-ranks 4000:5000]
//   bin/align eval --src A.vec --tgt B.vec --dict D.txt [--map W.txt] [--dev-ranks 4000:5000]
// The dictionary is MUSE "src tgt" pairs; --dev-ranks holds out the source words ranked [a, b) by
// first appearance (MUSE files are frequency-ordered) from fitting, and evaluates on them.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>

#include "data/dictionary.h"
#include "eval/alignment.h"
#include "eval/anchors.h"
#include "eval/encoder_options.h"
#include "layers/load_encoder.h"

using namespace sa;

namespace {

std::pair<int, int> parse_ranks(const std::string& s) {
  if (s.empty()) return {0, 0};
  const size_t c = s.find(':');
  SA_CHECK(c != std::string::npos, "--dev-ranks {}: expected FIRST:END, e.g. 4000:5000", s);
  const int a = std::stoi(s.substr(0, c)), b = std::stoi(s.substr(c + 1));
  SA_CHECK(0 <= a && a < b, "--dev-ranks {}: expected 0 <= FIRST < END", s);
  return {a, b};
}

// Dictionary pairs split by the rank of their source word: in [a, b) -> dev, else train.
struct Split {
  std::vector<std::pair<std::string, std::string>> train, dev;
};
Split split_by_rank(const Dictionary& d, std::pair<int, int> ranks) {
  std::map<std::string, int> rank;
  Split s;
  for (const auto& p : d.pairs) {
    auto [it, fresh] = rank.emplace(p.first, static_cast<int>(rank.size()));
    (it->second >= ranks.first && it->second < ranks.second ? s.dev : s.train).push_back(p);
  }
  return s;
}

Matrix rows_of(const WordVectors& v, const std::vector<int>& idx) {
  Matrix m(static_cast<int64_t>(idx.size()), v.vectors.cols);
  for (size_t i = 0; i < idx.size(); ++i)
    std::copy(v.vectors.v.begin() + idx[i] * v.vectors.cols, v.vectors.v.begin() + (idx[i] + 1) * v.vectors.cols,
              m.v.begin() + static_cast<int64_t>(i) * m.cols);
  return m;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Projection alignment (least squares or Procrustes) and bilingual lexicon induction"};
  app.require_subcommand(1);
  EncoderOptions model;
  std::string corpus, out, src, tgt, dict, map_path, method = "lsq", dev = "";
  int refine = 0, batch = 64;
  int64_t max_sentences = 0;
  bool identical = false;
  auto* an = app.add_subcommand("anchors", "mean contextual vector per word and layer over a corpus");
  model.add_to(an);
  an->add_option("--corpus", corpus, "one tokenized sentence per line")->required();
  an->add_option("-o,--output", out, "prefix: PREFIX.layerL.vec")->required();
  an->add_option("--max-sentences", max_sentences);
  an->add_option("--batch-size", batch)->check(CLI::Validator(positive_integer, "POSITIVE"));
  auto* fit = app.add_subcommand("fit", "a linear map from source to target anchors on dictionary pairs");
  auto* ev = app.add_subcommand("eval", "bilingual lexicon induction: P@1 and P@5, nearest neighbour and CSLS");
  for (CLI::App* c : {fit, ev}) {
    c->add_option("--src", src, "source anchors (word2vec text)")->required();
    c->add_option("--tgt", tgt, "target anchors (word2vec text)")->required();
    c->add_option("--dict", dict, "MUSE dictionary \"src tgt\" per line")->required();
    c->add_option("--dev-ranks", dev, "source ranks FIRST:END held out of fitting (and evaluated)");
  }
  fit->add_option("-o,--output", out, "the map W (text: rows cols, then rows)")->required();
  fit->add_option("--method", method, "lsq (the paper's Eq. 8) or procrustes")->check(CLI::IsMember({"lsq", "procrustes"}));
  fit->add_option("--refine", refine, "Procrustes refinements on CSLS mutual nearest neighbours (MUSE)");
  fit->add_flag("--add-identical", identical, "add words present in both anchor files as identical pairs");
  ev->add_option("--map", map_path, "W from `fit` (default: the identity, for one shared space)");
  CLI11_PARSE(app, argc, argv);
  try {
    if (an->parsed()) {
      model.check();
      std::unique_ptr<ContextualEncoder> enc = load_encoder(model.source, resolve_device("auto"));
      std::printf("anchors: %s over %s -> %s.layer{0..%d}.vec\n", enc->origin.c_str(), corpus.c_str(), out.c_str(),
                  enc->n_layers() - 1);
      auto layers = average_anchors(*enc, corpus, {batch, 1, max_sentences, enc->lowercase});
      for (size_t l = 0; l < layers.size(); ++l) {
        const std::string path = out + ".layer" + std::to_string(l) + ".vec";
        write_word_vectors(layers[l], path);
        std::printf("layer %zu: %ld words x %ld -> %s\n", l, (long)layers[l].vectors.rows, (long)layers[l].vectors.cols,
                    path.c_str());
      }
      return 0;
    }
    const WordVectors S = read_word_vectors(src), T = read_word_vectors(tgt);
    const Dictionary d = read_muse_dictionary(dict);
    if (d.skipped)
      std::fprintf(stderr, "align: warning: %s: %zu of %zu lines skipped (first: %s)\n", dict.c_str(), d.skipped,
                   d.lines, d.first_skip.c_str());
    const Split sp = split_by_rank(d, parse_ranks(dev));
    // Without pairs, fitting fails in LAPACK's terms and evaluation prints a meaningless 0.0%.
    auto require_pairs = [&](size_t usable, size_t pairs, const char* which) {
      SA_CHECK(usable > 0,
               "{}: no usable pairs: none of its {} {}pair{} has its source word in {} and its target in {}", dict,
               pairs, which, pairs == 1 ? "" : "s", src, tgt);
    };
    if (fit->parsed()) {
      std::vector<int> xs, ys;
      std::set<std::pair<int, int>> seen;
      auto add = [&](int a, int b) {
        if (a >= 0 && b >= 0 && seen.insert({a, b}).second) xs.push_back(a), ys.push_back(b);
      };
      for (const auto& [a, b] : sp.train) add(S.find(a), T.find(b));
      const size_t from_dict = xs.size();
      if (!identical) require_pairs(from_dict, sp.train.size(), dev.empty() ? "" : "training ");
      std::set<std::string> held;
      for (const auto& p : sp.dev) held.insert(p.first);
      if (identical)
        for (size_t i = 0; i < S.words.size(); ++i)
          if (!held.count(S.words[i])) add(static_cast<int>(i), T.find(S.words[i]));
      std::printf("fit: %zu dictionary pairs in both anchor files (%zu held out as dev), %zu identical pairs added\n",
                  from_dict, sp.dev.size(), xs.size() - from_dict);
      Matrix X = rows_of(S, xs), Y = rows_of(T, ys);
      Matrix W = method == "lsq" ? least_squares_map(X, Y) : procrustes_map(X, Y);
      for (int it = 0; it < refine; ++it) {
        // MUSE refinement: pairs that are mutual CSLS nearest neighbours among the 15k most
        // frequent words (the anchor files are frequency-ordered), then Procrustes again.
        const int n = static_cast<int>(std::min<int64_t>({S.vectors.rows, T.vectors.rows, 15000}));
        std::vector<int> top(static_cast<size_t>(n));
        for (int i = 0; i < n; ++i) top[i] = i;
        Matrix ms = normalized_rows(matmul(rows_of(S, top), W)), mt = normalized_rows(rows_of(T, top));
        auto fwd = retrieve(ms, mt, top, 1, {true, 10}), bwd = retrieve(mt, ms, top, 1, {true, 10});
        xs.clear(), ys.clear();
        for (int i = 0; i < n; ++i)
          if (bwd[static_cast<size_t>(fwd[i][0])][0] == i) xs.push_back(i), ys.push_back(fwd[i][0]);
        W = procrustes_map(rows_of(S, xs), rows_of(T, ys));
        std::printf("refinement %d: %zu mutual nearest neighbours\n", it + 1, xs.size());
      }
      write_map(W, out);
      std::printf("map [%ld x %ld] (%s) -> %s\n", (long)W.rows, (long)W.cols, method.c_str(), out.c_str());
      return 0;
    }
    // eval: queries = dev sources (or every dictionary source) present in both files.
    const auto& pairs = dev.empty() ? d.pairs : sp.dev;
    std::map<int, std::vector<int>> gold;
    for (const auto& [a, b] : pairs)
      if (int s = S.find(a), t = T.find(b); s >= 0 && t >= 0) gold[s].push_back(t);
    std::vector<int> q;
    std::vector<std::vector<int>> g;
    for (auto& [s, ts] : gold) q.push_back(s), g.push_back(ts);
    require_pairs(q.size(), pairs.size(), dev.empty() ? "" : ("--dev-ranks " + dev + " ").c_str());
    Matrix mapped = map_path.empty() ? S.vectors : matmul(S.vectors, read_map(map_path));
    mapped = normalized_rows(mapped);
    const Matrix tn = normalized_rows(T.vectors);
    for (bool csls : {false, true}) {
      BliScore s = bli_precision(mapped, tn, q, g, {csls, 10});
      std::printf("BLI %-4s P@1 %5.1f%%  P@5 %5.1f%%  (%zu queries%s)\n", csls ? "CSLS" : "NN", 100 * s.p_at_1,
                  100 * s.p_at_5, s.queries, dev.empty() ? "" : (", dev ranks " + dev).c_str());
    }
  } catch (const std::exception& e) {
    return tool_failure("align", e);
  }
  return 0;
}
