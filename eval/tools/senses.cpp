// bin/senses: inspect the senses of a trained SaELMo run, and the pseudo-word evaluation.
//   bin/senses list --model RUN --word W [--top K]       enabled senses, selection counts, nearest words
//   bin/senses dump --model RUN --output F [--direction D]   sense vectors, word2vec text, "word#s"
//   bin/senses pseudo-corpus --pairs P --corpus C --output F  merge each pair into one token "a_b"
//   bin/senses pseudo-eval --model RUN --pairs P --corpus C   purity / V-measure of the selected senses
#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

#include "data/corpus.h"
#include "eval/clustering.h"
#include "layers/elmo_embedder.h"
#include "sense/selection.h"
#include "train/run_dir.h"

using namespace sa;

namespace {

std::vector<std::pair<std::string, std::string>> read_pairs(const std::string& path) {
  std::ifstream f(path);
  SA_CHECK(f, "{}: cannot open", path);
  std::vector<std::pair<std::string, std::string>> pairs;
  std::string line;
  for (int n = 1; std::getline(f, line); ++n) {
    std::istringstream ss(line);
    std::string a, b, extra;
    if (!(ss >> a)) continue;
    SA_CHECK((ss >> b) && !(ss >> extra) && a != b, "{}:{}: expected two different words", path, n);
    pairs.emplace_back(a, b);
  }
  SA_CHECK(!pairs.empty(), "{}: no pairs", path);
  return pairs;
}

void list(LoadedRun& r, const std::string& word, int top) {
  SA_CHECK(r.lm.sense(), "{}: not a SaELMo run (n_context = 0)", r.config.run_dir);
  SA_CHECK(r.vocab.contains(word), "'{}' is not in the vocabulary", word);
  const int w = r.vocab.id(word);
  for (int d = 0; d < 2; ++d) {
    SenseHead& h = r.lm.heads[d];
    const int C = h.table.n_context();
    std::map<int, int> counts;
    if (const auto* win = h.usage.window_of(w))
      for (int32_t row : *win) ++counts[row - w * C];
    std::vector<int32_t> rows = h.table.enabled_rows();
    NoGrad ng;
    Tensor Wn = ops::div(h.table.W, ops::add_scalar(ops::sqrt(ops::sum(ops::square(h.table.W), 1, true)), 1e-12));
    std::printf("%s direction, '%s':\n", d == 0 ? "forward" : "backward", word.c_str());
    for (int s = 0; s < C; ++s) {
      const int row = h.table.row(w, s);
      if (!h.table.is_enabled(row)) continue;
      std::vector<double> sims = ops::matmul(Wn, ops::reshape(ops::slice(Wn, 0, row, row + 1), {1, -1}), false, true).values();
      std::vector<std::pair<double, int32_t>> best;
      for (int32_t o : rows)
        if (o / C != w) best.emplace_back(sims[o], o);
      std::partial_sort(best.begin(), best.begin() + std::min<size_t>(top, best.size()), best.end(), std::greater<>());
      std::printf("  sense %d (score %.3g, %d of the last %zu selections):", s, h.table.enabled[row], counts[s],
                  h.usage.window_of(w) ? h.usage.window_of(w)->size() : 0);
      for (int k = 0; k < top && k < static_cast<int>(best.size()); ++k)
        std::printf(" %s#%d", r.vocab.word(best[k].second / C).c_str(), best[k].second % C);
      std::printf("\n");
    }
  }
}

void dump(LoadedRun& r, const std::string& out, int d) {
  SA_CHECK(r.lm.sense(), "{}: not a SaELMo run", r.config.run_dir);
  SenseHead& h = r.lm.heads[d];
  std::vector<int32_t> rows = h.table.enabled_rows();
  std::vector<double> w = h.table.W.values();
  const int64_t P = h.table.W.dim(1);
  std::ofstream f(out);
  SA_CHECK(f, "{}: cannot write", out);
  f << rows.size() << " " << P << "\n";
  for (int32_t row : rows) {
    f << r.vocab.word(row / h.table.n_context()) << "#" << row % h.table.n_context();
    for (int64_t k = 0; k < P; ++k) f << " " << static_cast<float>(w[row * P + k]);
    f << "\n";
  }
  std::printf("senses: %zu sense vectors -> %s\n", rows.size(), out.c_str());
}

void pseudo_corpus(const std::string& pairs_file, const std::string& corpus, const std::string& out) {
  auto pairs = read_pairs(pairs_file);
  std::map<std::string, std::string> merged;
  for (auto& [a, b] : pairs) merged[a] = merged[b] = a + "_" + b;
  std::ofstream f(out);
  SA_CHECK(f, "{}: cannot write", out);
  int64_t replaced = 0;
  for (const std::string& file : expand_glob(corpus))
    for (Sentence& s : read_sentences(file, false)) {
      for (std::string& w : s)
        if (auto it = merged.find(w); it != merged.end()) w = it->second, ++replaced;
      for (size_t i = 0; i < s.size(); ++i) f << (i ? " " : "") << s[i];
      f << "\n";
    }
  std::printf("pseudo-corpus: %zu pairs, %ld occurrences merged -> %s\n", pairs.size(), (long)replaced, out.c_str());
}

void pseudo_eval(LoadedRun& r, const std::string& pairs_file, const std::string& corpus, int max_sentences,
                 bool stateless) {
  SA_CHECK(r.lm.sense(), "{}: not a SaELMo run", r.config.run_dir);
  auto pairs = read_pairs(pairs_file);
  std::map<std::string, std::pair<int, int>> which;  // word -> (pair, hidden label)
  std::vector<int> pseudo_id;
  for (size_t i = 0; i < pairs.size(); ++i) {
    std::string p = pairs[i].first + "_" + pairs[i].second;
    SA_CHECK(r.vocab.contains(p), "'{}' is not in the run's vocabulary: train on `bin/senses pseudo-corpus` output", p);
    pseudo_id.push_back(r.vocab.id(p));
    which[pairs[i].first] = {static_cast<int>(i), 0};
    which[pairs[i].second] = {static_cast<int>(i), 1};
  }
  // Sentences with pair words, merged, with the hidden word of every merged position.
  struct Item {
    Sentence merged;
    std::vector<std::array<int, 3>> hits;  // position, pair, label
  };
  std::vector<Item> items;
  for (const std::string& file : expand_glob(corpus))
    for (Sentence& s : read_sentences(file, false)) {
      Item it;
      for (size_t i = 0; i < s.size(); ++i)
        if (auto w = which.find(s[i]); w != which.end()) {
          it.hits.push_back({static_cast<int>(i), w->second.first, w->second.second});
          s[i] = pairs[w->second.first].first + "_" + pairs[w->second.first].second;
        }
      if (!it.hits.empty() && static_cast<int>(items.size()) < max_sentences) it.merged = s, items.push_back(std::move(it));
    }
  const int64_t P = r.config.model.projection_dim;
  std::vector<std::map<int, std::vector<int>>> tables[2];
  for (auto& t : tables) t.resize(pairs.size());
  // Stateful by default: training selects senses from LSTM states carried across batches, and
  // the top-layer vectors of a zero state differ systematically from those (cosines with the
  // learned centers turn negative), so stateless selection is not the training-time one.
  ElmoEmbedder emb(r.lm.bilm, !stateless, 64);
  for (size_t b = 0; b < items.size(); b += 64) {
    std::vector<Sentence> batch;
    for (size_t i = b; i < std::min(items.size(), b + 64); ++i) batch.push_back(items[i].merged);
    std::vector<Tensor> out = emb.embed(batch);
    for (size_t i = 0; i < batch.size(); ++i) {
      NoGrad ng;
      const Item& it = items[b + i];
      // Top layer [n, 2P]: the forward LM's output after reading token t, then the backward LM's.
      Tensor top = ops::reshape(ops::slice(out[i], 0, out[i].dim(0) - 1, out[i].dim(0)), {out[i].dim(1), 2 * P});
      for (int d = 0; d < 2; ++d) {
        std::vector<int32_t> pos, words;
        for (auto& h : it.hits) pos.push_back(h[0]), words.push_back(pseudo_id[h[1]]);
        Tensor ctx = ops::gather_rows(ops::slice(top, 1, d * P, (d + 1) * P), Tensor::from(pos, {(int64_t)pos.size()}));
        const PcaProjection& proj = r.lm.heads[d].proj;
        std::vector<int32_t> sel = select_senses(r.lm.heads[d].table, ctx, words, proj.matrix(),
                                                 r.config.sense.center_projection ? proj.mean() : Tensor());
        for (size_t k = 0; k < sel.size(); ++k) {
          std::vector<int>& cell = tables[d][it.hits[k][1]][sel[k]];
          cell.resize(2);
          cell[it.hits[k][2]]++;
        }
      }
    }
    std::fprintf(stderr, "\rpseudo-eval: %zu/%zu sentences", std::min(items.size(), b + 64), items.size());
  }
  std::fprintf(stderr, "\n");
  std::printf("%-24s %6s %6s | %-22s | %-22s | %s\n", "pair", "n_a", "n_b", "forward purity / V", "backward purity / V",
              "forward senses a/b");
  double sum[2][3] = {};
  for (size_t i = 0; i < pairs.size(); ++i) {
    int na = 0, nb = 0;
    for (auto& [k, c] : tables[0][i]) na += c[0], nb += c[1];
    ClusterScores f = cluster_scores(tables[0][i]), bk = cluster_scores(tables[1][i]);
    // Per selected sense: occurrences of the first / second hidden word (forward direction).
    std::string split;
    for (auto& [row, c] : tables[0][i]) split += fmt::format(" s{}:{}/{}", row % r.config.sense.n_context, c[0], c[1]);
    std::printf("%-24s %6d %6d | %.3f / %.3f (maj %.3f) | %.3f / %.3f |%s\n", (pairs[i].first + "_" + pairs[i].second).c_str(),
                na, nb, f.purity, f.v_measure, f.majority, bk.purity, bk.v_measure, split.c_str());
    for (int d = 0; d < 2; ++d) {
      ClusterScores s = d ? bk : f;
      sum[d][0] += s.purity, sum[d][1] += s.v_measure, sum[d][2] += s.majority;
    }
  }
  const double n = static_cast<double>(pairs.size());
  for (int d = 0; d < 2; ++d)
    std::printf("mean %s: purity %.3f (one-sense baseline %.3f), V-measure %.3f\n", d ? "backward" : "forward",
                sum[d][0] / n, sum[d][2] / n, sum[d][1] / n);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Senses of a trained SaELMo run, and the pseudo-word evaluation"};
  app.require_subcommand(1);
  std::string model, word, out, pairs, corpus;
  int top = 8, direction = 0, max_sentences = 20000;
  auto* l = app.add_subcommand("list", "a word's enabled senses, selection counts and nearest sense vectors");
  l->add_option("--model", model)->required();
  l->add_option("--word", word)->required();
  l->add_option("--top", top);
  auto* d = app.add_subcommand("dump", "every enabled sense vector, word2vec text format, names word#s");
  d->add_option("--model", model)->required();
  d->add_option("--output", out)->required();
  d->add_option("--direction", direction, "0 forward, 1 backward")->check(CLI::Range(0, 1));
  auto* pc = app.add_subcommand("pseudo-corpus", "merge each word pair into one artificial token a_b");
  pc->add_option("--pairs", pairs)->required();
  pc->add_option("--corpus", corpus)->required();
  pc->add_option("--output", out)->required();
  auto* pe = app.add_subcommand("pseudo-eval", "how purely the selected senses separate the hidden words");
  pe->add_option("--model", model)->required();
  pe->add_option("--pairs", pairs)->required();
  pe->add_option("--corpus", corpus, "the original (unmerged) text")->required();
  pe->add_option("--max-sentences", max_sentences);
  bool stateless = false;
  pe->add_flag("--stateless", stateless, "each sentence from a zero LSTM state (default: carried, as in training)");
  CLI11_PARSE(app, argc, argv);
  try {
    if (pc->parsed()) {
      pseudo_corpus(pairs, corpus, out);
      return 0;
    }
    LoadedRun r = load_run(model);
    if (l->parsed()) list(r, word, top);
    if (d->parsed()) dump(r, out, direction);
    if (pe->parsed()) pseudo_eval(r, pairs, corpus, max_sentences, stateless);
  } catch (const Error& e) {
    std::fprintf(stderr, "senses: %s\n", e.what());
    return 1;
  }
  return 0;
}
