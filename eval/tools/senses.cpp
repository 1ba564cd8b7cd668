// bin/senses: inspect the senses of a trained SaELMo run, and the pseudo-word evaluation.
//   bin/senses list --model RUN --word W [--top K] [--langs en,de]   enabled senses, selection counts, nearest
//                                                      words (a joint run: nearest in each language)
//   bin/senses plot --model RUN --word W --output F.svg [--top K] [--direction D]   2-D PCA picture
//   bin/senses memory [--vocab N --dim P --n-context C]   sense-table memory, before allocating anything
//   bin/senses dump --model RUN --output F [--direction D]   sense vectors, word2vec text, "word#s"
//   bin/senses pseudo-corpus --pairs P --corpus C --output F  merge each pair into one token "a_b"
//   bin/senses pseudo-eval --model RUN --pairs P --corpus C   purity / V-measure of the selected senses
#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <algorithm>
#include <array>
#include <fstream>
#include <map>
#include <sstream>

#include "data/corpus.h"
#include "eval/alignment.h"
#include "eval/clustering.h"
#include "layers/elmo_embedder.h"
#include "sense/projection.h"
#include "sense/selection.h"
#include "train/run_dir.h"

using namespace sa;

namespace {

std::string html_escape(const std::string& s) {
  std::string o;
  for (char ch : s) o += ch == '<' ? "&lt;" : ch == '>' ? "&gt;" : ch == '&' ? "&amp;" : ch == '"' ? "&quot;" : std::string(1, ch);
  return o;
}

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

// The language of each word of a joint (bilingual) run's vocabulary: 1 for the first corpus
// (train_prefix), 2 for the second (train_prefix_l2), whichever the word is relatively more
// frequent in (names and numbers occur in both). Empty for a monolingual run.
std::vector<uint8_t> word_languages(const LoadedRun& r) {
  if (r.config.train_prefix_l2.empty()) return {};
  std::vector<double> count[2];
  for (int k = 0; k < 2; ++k) {
    count[k].assign(static_cast<size_t>(r.vocab.size()), 0.0);
    double total = 0;
    for (const std::string& file : expand_glob(k == 0 ? r.config.train_prefix : r.config.train_prefix_l2))
      for (const Sentence& s : read_sentences(file, r.config.lowercase))
        for (const std::string& w : s) {
          total += 1;
          if (r.vocab.contains(w)) count[k][static_cast<size_t>(r.vocab.id(w))] += 1;
        }
    for (double& c : count[k]) c /= std::max(total, 1.0);
  }
  std::vector<uint8_t> lang(static_cast<size_t>(r.vocab.size()));
  for (size_t i = 0; i < lang.size(); ++i) lang[i] = count[1][i] > count[0][i] ? 2 : 1;
  return lang;
}

// The `top` enabled sense rows of other words closest (cosine) to `row`; with `lang`, only words
// of that language (1 or 2, as word_languages).
std::vector<int32_t> nearest_senses(const SenseTable& t, const Tensor& unit, int32_t row, int top,
                                    const std::vector<uint8_t>* langs = nullptr, int lang = 0) {
  NoGrad ng;
  const int C = t.n_context();
  std::vector<double> sims = ops::matmul(unit, ops::reshape(ops::slice(unit, 0, row, row + 1), {1, -1}), false, true).values();
  std::vector<std::pair<double, int32_t>> best;
  for (int32_t o : t.enabled_rows())
    if (o / C != row / C && (!langs || (*langs)[o / C] == lang)) best.emplace_back(sims[o], o);
  const size_t k = std::min<size_t>(static_cast<size_t>(top), best.size());
  std::partial_sort(best.begin(), best.begin() + static_cast<long>(k), best.end(), std::greater<>());
  std::vector<int32_t> out;
  for (size_t i = 0; i < k; ++i) out.push_back(best[i].second);
  return out;
}

std::string sense_name(const LoadedRun& r, int32_t row) {
  const int C = r.config.sense.n_context;
  return r.vocab.word(row / C) + "#" + std::to_string(row % C);
}

// Language names of a joint run ("en,de"), for labels.
std::array<std::string, 2> lang_names(const std::string& spec) {
  const size_t c = spec.find(',');
  SA_CHECK(c != std::string::npos && c > 0 && c + 1 < spec.size(), "--langs {}: expected two names, e.g. en,de", spec);
  return {spec.substr(0, c), spec.substr(c + 1)};
}

void list(LoadedRun& r, const std::string& word, int top, const std::string& langs_spec) {
  SA_CHECK(r.lm.sense(), "{}: not a SaELMo run (n_context = 0)", r.config.run_dir);
  SA_CHECK(r.vocab.contains(word), "'{}' is not in the vocabulary", word);
  const int w = r.vocab.id(word);
  const std::vector<uint8_t> langs = word_languages(r);
  const auto names = lang_names(langs_spec);
  for (int d = 0; d < 2; ++d) {
    SenseHead& h = r.lm.heads[d];
    const int C = h.table.n_context();
    std::map<int, int> counts;
    if (const auto* win = h.usage.window_of(w))
      for (int32_t row : *win) ++counts[row - w * C];
    const Tensor unit = unit_rows(h.table.W);
    std::printf("%s direction, '%s':\n", d == 0 ? "forward" : "backward", word.c_str());
    for (int s = 0; s < C; ++s) {
      const int row = h.table.row(w, s);
      if (!h.table.is_enabled(row)) continue;
      std::printf("  sense %d (score %.3g, %d of the last %zu selections):", s, h.table.enabled[row], counts[s],
                  h.usage.window_of(w) ? h.usage.window_of(w)->size() : 0);
      if (langs.empty()) {
        for (int32_t o : nearest_senses(h.table, unit, row, top)) std::printf(" %s", sense_name(r, o).c_str());
      } else {  // a joint run: the nearest senses in each language
        for (int k = 0; k < 2; ++k) {
          std::printf("\n    nearest %s:", names[k].c_str());
          for (int32_t o : nearest_senses(h.table, unit, row, top, &langs, k + 1)) std::printf(" %s", sense_name(r, o).c_str());
        }
      }
      std::printf("\n");
    }
  }
}

// A 2-D PCA picture of a word's enabled senses and the nearest senses of other words (the paper's
// appendix figures), as SVG: the word's senses in colour, each neighbour in its sense's colour.
// For a joint run, each sense gets its `top` nearest senses in each language; the second
// language's are drawn as squares with italic labels.
void plot(LoadedRun& r, const std::string& word, int top, int d, const std::string& out, const std::string& langs_spec) {
  SA_CHECK(r.lm.sense(), "{}: not a SaELMo run (n_context = 0)", r.config.run_dir);
  SA_CHECK(r.vocab.contains(word), "'{}' is not in the vocabulary", word);
  SenseHead& h = r.lm.heads[d];
  const int w = r.vocab.id(word), C = h.table.n_context();
  const Tensor unit = unit_rows(h.table.W);
  std::vector<int32_t> rows;
  std::vector<int> group;  // index of the word's sense a point belongs to
  const std::vector<uint8_t> langs = word_languages(r);
  const auto names = lang_names(langs_spec);
  for (int s = 0; s < C; ++s) {
    const int32_t row = h.table.row(w, s);
    if (!h.table.is_enabled(row)) continue;
    const int g = static_cast<int>(std::count(group.begin(), group.end(), -1));
    rows.push_back(row), group.push_back(-1);
    for (int k = 0; k < (langs.empty() ? 1 : 2); ++k)
      for (int32_t o : nearest_senses(h.table, unit, row, top, langs.empty() ? nullptr : &langs, k + 1))
        if (std::find(rows.begin(), rows.end(), o) == rows.end()) rows.push_back(o), group.push_back(g);
  }
  // Second-language words are marked.
  auto second = [&](int32_t row) { return !langs.empty() && langs[row / C] == 2; };
  NoGrad ng;
  const int64_t n = static_cast<int64_t>(rows.size()), P = unit.dim(1);
  SA_CHECK(n >= 3, "'{}': too few senses and neighbours to plot", word);
  Tensor pts = ops::gather_rows(unit, Tensor::from(rows, {n}));
  PcaProjection pca(P, 2, n, 1);
  pca.push(pts);
  pca.refit();
  std::vector<double> xy = ops::matmul(ops::sub(pts, pca.mean().to(pts.dtype())), pca.matrix().to(pts.dtype())).values();
  double lo[2] = {INFINITY, INFINITY}, hi[2] = {-INFINITY, -INFINITY};
  for (int64_t i = 0; i < n; ++i)
    for (int k = 0; k < 2; ++k) lo[k] = std::min(lo[k], xy[i * 2 + k]), hi[k] = std::max(hi[k], xy[i * 2 + k]);
  const double W = 800, H = 600, m = 60;
  auto X = [&](double v) { return m + (v - lo[0]) / std::max(hi[0] - lo[0], 1e-9) * (W - 2 * m); };
  auto Y = [&](double v) { return H - m - (v - lo[1]) / std::max(hi[1] - lo[1], 1e-9) * (H - 2 * m); };
  static const char* palette[] = {"#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"};
  std::ofstream f(out);
  SA_CHECK(f, "{}: cannot write", out);
  f << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H
    << "\" font-family=\"sans-serif\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
    << "<text x=\"" << m << "\" y=\"30\" font-size=\"16\">" << html_escape(word) << ": senses and nearest senses ("
    << (d == 0 ? "forward" : "backward") << ", 2-D PCA)</text>\n";
  if (!langs.empty())
    f << "<text x=\"" << m << "\" y=\"50\" font-size=\"12\">circles: " << html_escape(names[0]) << ", squares and italics: "
      << html_escape(names[1]) << "</text>\n";
  for (int64_t i = 0, g = -1; i < n; ++i) {
    if (group[i] < 0) ++g;
    const char* colour = palette[(group[i] < 0 ? g : group[i]) % 8];
    const bool own = group[i] < 0, l2 = second(rows[i]);
    if (l2)
      f << "<rect x=\"" << X(xy[i * 2]) - 4 << "\" y=\"" << Y(xy[i * 2 + 1]) - 4 << "\" width=\"8\" height=\"8\" fill=\""
        << colour << "\"/>\n";
    else
      f << "<circle cx=\"" << X(xy[i * 2]) << "\" cy=\"" << Y(xy[i * 2 + 1]) << "\" r=\"" << (own ? 7 : 4) << "\" fill=\""
        << colour << "\"/>\n";
    f << "<text x=\"" << X(xy[i * 2]) + 8 << "\" y=\"" << Y(xy[i * 2 + 1]) + 4 << "\" font-size=\"" << (own ? 15 : 11)
      << "\" fill=\"" << colour << "\"" << (own ? " font-weight=\"bold\"" : "") << (l2 ? " font-style=\"italic\"" : "")
      << ">" << html_escape(sense_name(r, rows[i])) << "</text>\n";
  }
  f << "</svg>\n";
  SA_CHECK(f.good(), "{}: write failed", out);
  std::printf("senses: %ld points (%s's senses and their %d nearest each) -> %s\n", (long)n, word.c_str(), top, out.c_str());
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

// One pseudo-word's occurrences in one direction: their selection vectors [n, P] (inference
// mode: no dropout) and the hidden original word of each (0 or 1).
struct Occurrences {
  std::vector<float> vectors;
  std::vector<int> labels;
  int64_t size() const { return static_cast<int64_t>(labels.size()); }
  Tensor matrix(int64_t P) const {
    return Tensor::of(std::vector<double>(vectors.begin(), vectors.end()), {size(), P}, DType::F32, Device::cpu());
  }
};

// Embeds every sentence of `corpus` that holds a pair word, with the pair merged into its
// pseudo-word, and returns the top-layer vector of each merged position per pair and direction,
// and in `text_mean` the mean top-layer vector of every token embedded, per direction.
std::vector<std::array<Occurrences, 2>> pseudo_occurrences(LoadedRun& r,
                                                           const std::vector<std::pair<std::string, std::string>>& pairs,
                                                           const std::string& corpus, int max_sentences, bool stateful,
                                                           std::array<Tensor, 2>& text_mean) {
  std::map<std::string, std::pair<int, int>> which;  // word -> (pair, hidden label)
  for (size_t i = 0; i < pairs.size(); ++i) {
    which[pairs[i].first] = {static_cast<int>(i), 0};
    which[pairs[i].second] = {static_cast<int>(i), 1};
  }
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
  std::vector<std::array<Occurrences, 2>> occ(pairs.size());
  // Stateless by default (decision 11); --stateful carries LSTM states across batches as training
  // does (it gave the same scores on the runs measured).
  ElmoEmbedder emb(r.lm.bilm, stateful, 64);
  std::vector<double> sum(static_cast<size_t>(2 * P), 0.0);
  int64_t tokens = 0;
  for (size_t b = 0; b < items.size(); b += 64) {
    std::vector<Sentence> batch;
    for (size_t i = b; i < std::min(items.size(), b + 64); ++i) batch.push_back(items[i].merged);
    std::vector<Tensor> out = emb.embed(batch);
    for (size_t i = 0; i < batch.size(); ++i) {
      NoGrad ng;
      // Top layer [n, 2P]: the forward LM's output after reading token t, then the backward LM's.
      const std::vector<double> top = ops::slice(out[i], 0, out[i].dim(0) - 1, out[i].dim(0)).values();
      for (size_t k = 0; k < top.size(); ++k) sum[k % sum.size()] += top[k];
      tokens += out[i].dim(1);
      for (const auto& [pos, pair, label] : items[b + i].hits)
        for (int d = 0; d < 2; ++d) {
          Occurrences& o = occ[pair][d];
          const auto row = top.begin() + (pos * 2 + d) * P;
          o.vectors.insert(o.vectors.end(), row, row + P);
          o.labels.push_back(label);
        }
    }
    std::fprintf(stderr, "\rpseudo-eval: %zu/%zu sentences", std::min(items.size(), b + 64), items.size());
  }
  std::fprintf(stderr, "\n");
  for (int d = 0; d < 2; ++d) {
    std::vector<double> m(sum.begin() + d * P, sum.begin() + (d + 1) * P);
    for (double& v : m) v /= static_cast<double>(std::max<int64_t>(tokens, 1));
    text_mean[d] = Tensor::of(m, {1, P}, DType::F32, Device::cpu());
  }
  return occ;
}

// Selected sense -> occurrences of each hidden word, for one pseudo-word in one direction.
// `mean` is what selection subtracts (see selection_mean); undefined for raw cosines.
std::map<int, std::vector<int>> selection_table(const SenseTable& t, const PcaProjection& proj, int32_t word,
                                                const Occurrences& o, const Tensor& ctx, const Tensor& mean) {
  std::map<int, std::vector<int>> table;
  if (o.size() == 0) return table;
  const std::vector<int32_t> sel = select_senses(t, ctx, std::vector<int32_t>(o.labels.size(), word), proj.matrix(), mean);
  for (size_t k = 0; k < sel.size(); ++k) {
    std::vector<int>& cell = table[sel[k]];
    cell.resize(2);
    cell[o.labels[k]]++;
  }
  return table;
}

void pseudo_eval(LoadedRun& r, const std::string& pairs_file, const std::string& corpus, int max_sentences,
                 bool stateful, bool ceiling) {
  SA_CHECK(r.lm.sense(), "{}: not a SaELMo run", r.config.run_dir);
  auto pairs = read_pairs(pairs_file);
  std::vector<int32_t> pseudo_id;
  for (auto& [a, b] : pairs) {
    const std::string p = a + "_" + b;
    SA_CHECK(r.vocab.contains(p), "'{}' is not in the run's vocabulary: train on `bin/senses pseudo-corpus` output", p);
    pseudo_id.push_back(r.vocab.id(p));
  }
  std::array<Tensor, 2> text_mean;
  const std::vector<std::array<Occurrences, 2>> occ =
      pseudo_occurrences(r, pairs, corpus, max_sentences, stateful, text_mean);
  const int64_t P = r.config.model.projection_dim;
  const int C = r.config.sense.n_context;
  // With selection_mean = "word", selection subtracts the word's mean context, which training
  // keeps as sense 0's center, an average over a few hundred steps. The whole representation
  // drifts faster than that (measured: 1.9-2.8 in 250 steps, nearly all of it common to every
  // word, against 0.45-0.65 for the stored means), so the stored mean often lies further from
  // the current vectors than a word's spread, which tips every occurrence toward one center.
  // So the word-centred rule is scored twice: with the stored mean, and with the mean of the
  // word's vectors over this text (no labels).
  // With "word_offset" the stored offsets are added to the mean of every token embedded here,
  // which plays the part of the training batch's mean.
  using M = SenseOptions::SelectionMean;
  const bool word_means = r.config.sense.selection_mean == M::Word || r.config.sense.selection_mean == M::WordOffset;
  std::printf("%-22s %5s %5s | %-25s | %-13s |%s %s\n", "pair", "n_a", "n_b", "forward purity / V", "backward",
              word_means ? " inference-mean fwd / bwd |" : "", "forward senses a/b");
  // Sums over pairs: [rule][direction] purity, V-measure, one-sense baseline; offset and spread.
  double sum[2][2][3] = {}, offset[2] = {}, spread[2] = {};
  for (size_t i = 0; i < pairs.size(); ++i) {
    ClusterScores score[2][2];
    std::map<int, std::vector<int>> shown;
    for (int d = 0; d < 2; ++d) {
      const SenseHead& h = r.lm.heads[d];
      const Occurrences& o = occ[i][d];
      if (o.size() == 0) continue;
      const Tensor ctx = o.matrix(P);
      const Tensor stored = selection_mean(h.table, r.config.sense, h.proj.mean(), {pseudo_id[i]}, text_mean[d]);
      auto tab = selection_table(h.table, h.proj, pseudo_id[i], o, ctx, stored);
      score[0][d] = cluster_scores(tab);
      if (d == 0) shown = tab;
      if (!word_means) continue;
      NoGrad ng;
      const Tensor inference = ops::mean(ctx, 0, true);
      auto tab_i = selection_table(h.table, h.proj, pseudo_id[i], o, ctx, inference);
      score[1][d] = cluster_scores(tab_i);
      if (d == 0) shown = tab_i;
      const Tensor pm = h.proj.matrix();
      offset[d] += std::sqrt(ops::sum(ops::square(ops::matmul(ops::sub(inference, stored.to(DType::F32)), pm))).item());
      spread[d] += std::sqrt(ops::sum(ops::square(ops::matmul(ops::sub(ctx, inference), pm))).item() / o.size());
    }
    int na = 0, nb = 0;
    for (int l : occ[i][0].labels) (l ? nb : na)++;
    std::string split;  // per selected sense: occurrences of the first / second hidden word (forward)
    for (auto& [row, c] : shown) split += fmt::format(" s{}:{}/{}", row % C, c[0], c[1]);
    const std::string inf = word_means ? fmt::format(" {:.3f} / {:.3f}              |", score[1][0].purity, score[1][1].purity) : "";
    std::printf("%-22s %5d %5d | %.3f / %.3f (maj %.3f) | %.3f / %.3f |%s%s\n", (pairs[i].first + "_" + pairs[i].second).c_str(),
                na, nb, score[0][0].purity, score[0][0].v_measure, score[0][0].majority, score[0][1].purity,
                score[0][1].v_measure, inf.c_str(), split.c_str());
    for (int k = 0; k < 2; ++k)
      for (int d = 0; d < 2; ++d)
        sum[k][d][0] += score[k][d].purity, sum[k][d][1] += score[k][d].v_measure, sum[k][d][2] += score[k][d].majority;
  }
  const double n = static_cast<double>(pairs.size());
  for (int k = 0; k < (word_means ? 2 : 1); ++k)
    for (int d = 0; d < 2; ++d)
      std::printf("mean %s%s: purity %.3f (one-sense baseline %.3f), V-measure %.3f\n", d ? "backward" : "forward",
                  k ? " (inference-mode word means)" : "", sum[k][d][0] / n, sum[k][d][2] / n, sum[k][d][1] / n);
  if (word_means)
    for (int d = 0; d < 2; ++d)
      std::printf("%s: stored word mean lies %.2f from the inference-mode mean (after P); inference-mode spread %.2f\n",
                  d ? "backward" : "forward", offset[d] / n, spread[d] / n);
  if (!ceiling) return;
  // What these vectors could separate at best: unsupervised 2-means and a supervised probe, on
  // the full vectors and on their projection by the selection space's P (what selection sees).
  std::printf("\nceiling (selection vectors, mean-centred per pseudo-word, unit length; 2-means and a nearest-mean\n"
              "probe on the full vectors, 2-means again after the projection P):\n");
  std::printf("%-24s | %-26s | %-26s\n", "pair", "forward 2m / probe / P 2m", "backward 2m / probe / P 2m");
  double csum[2][3] = {};
  for (size_t i = 0; i < pairs.size(); ++i) {
    SeparationCeiling c[2], cp[2];
    for (int d = 0; d < 2; ++d) {
      const Occurrences& o = occ[i][d];
      c[d] = separation_ceiling(o.vectors, P, o.labels, 7 + i);
      NoGrad ng;
      const Tensor pm = r.lm.heads[d].proj.matrix();
      const std::vector<double> pv = ops::matmul(o.matrix(P), pm).values();
      cp[d] = separation_ceiling(std::vector<float>(pv.begin(), pv.end()), pm.dim(1), o.labels, 7 + i);
      csum[d][0] += c[d].two_means_purity, csum[d][1] += c[d].probe_accuracy, csum[d][2] += cp[d].two_means_purity;
    }
    std::printf("%-24s | %.3f / %.3f / %.3f      | %.3f / %.3f / %.3f\n", (pairs[i].first + "_" + pairs[i].second).c_str(),
                c[0].two_means_purity, c[0].probe_accuracy, cp[0].two_means_purity, c[1].two_means_purity,
                c[1].probe_accuracy, cp[1].two_means_purity);
  }
  for (int d = 0; d < 2; ++d)
    std::printf("mean %s: 2-means purity %.3f, nearest-mean probe accuracy %.3f, 2-means purity after P %.3f\n",
                d ? "backward" : "forward", csum[d][0] / n, csum[d][1] / n, csum[d][2] / n);
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
  std::string langs = "L1,L2";
  l->add_option("--langs", langs, "names of a joint run's two languages, e.g. en,de (labels only)");
  auto* pl = app.add_subcommand("plot", "2-D PCA picture (SVG) of a word's senses and their nearest senses");
  pl->add_option("--model", model)->required();
  pl->add_option("--word", word)->required();
  pl->add_option("--top", top, "nearest senses per sense");
  pl->add_option("--direction", direction, "0 forward, 1 backward")->check(CLI::Range(0, 1));
  pl->add_option("--output", out, "SVG file")->required();
  pl->add_option("--langs", langs, "names of a joint run's two languages, e.g. en,de (labels only)");
  auto* mem = app.add_subcommand("memory", "sense-table memory for a vocabulary size, per n_context (nothing allocated)");
  int64_t mem_vocab = 793471;
  int mem_dim = 512, mem_context = 6;
  mem->add_option("--vocab", mem_vocab, "words (default: the paper's 793,471)");
  mem->add_option("--dim", mem_dim, "lstm.projection_dim");
  mem->add_option("--n-context", mem_context, "the configuration's n_context, marked in the table");
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
  bool stateful = false;
  pe->add_flag("--stateful", stateful, "carry LSTM states across batches, as training does (default: zero state)");
  bool ceiling = false;
  pe->add_flag("--ceiling", ceiling, "also report what the selection vectors could separate: 2-means and a probe");
  CLI11_PARSE(app, argc, argv);
  try {
    if (pc->parsed()) {
      pseudo_corpus(pairs, corpus, out);
      return 0;
    }
    if (mem->parsed()) {
      std::printf("sense tables (W, b, their Adagrad accumulators, centers; float32) for %ld words x %d dims\n",
                  (long)mem_vocab, mem_dim);
      std::printf("%9s %14s %18s\n", "n_context", "MiB per table", "MiB both directions");
      for (int c = 1; c <= std::max(8, mem_context); ++c) {
        const double b = SenseTable::bytes_needed(mem_vocab, c, mem_dim, DType::F32) / 1048576.0;
        std::printf("%9d %14.1f %18.1f%s\n", c, b, 2 * b, c == mem_context ? "   <- configured" : "");
      }
      return 0;
    }
    LoadedRun r = load_run(model);
    if (l->parsed()) list(r, word, top, langs);
    if (pl->parsed()) plot(r, word, top, direction, out, langs);
    if (d->parsed()) dump(r, out, direction);
    if (pe->parsed()) pseudo_eval(r, pairs, corpus, max_sentences, stateful, ceiling);
  } catch (const Error& e) {
    std::fprintf(stderr, "senses: %s\n", e.what());
    return 1;
  }
  return 0;
}
