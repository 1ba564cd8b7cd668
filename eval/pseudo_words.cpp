#include "eval/pseudo_words.h"
#include "data/input_limits.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "data/atomic_file.h"
#include "data/corpus.h"
#include "data/progress_line.h"
#include "sense/selection.h"

namespace sa {

namespace {

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
std::vector<std::array<Occurrences, 2>> pseudo_occurrences(const SenseModel& r, const WordPairs& pairs,
                                                           const std::string& corpus, const PseudoEvalOptions& opt,
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
      if (!it.hits.empty() && static_cast<int>(items.size()) < opt.max_sentences)
        it.merged = s, items.push_back(std::move(it));
    }
  const int64_t P = r.dim();
  std::vector<std::array<Occurrences, 2>> occ(pairs.size());
  // Stateless by default (docs/design.md §1.3); stateful carries LSTM states across batches as
  // training does (it gave the same scores on the runs measured).
  const int batch_size = 64;
  std::unique_ptr<EncoderState> state = opt.stateful ? r.encoder->new_state(batch_size) : nullptr;
  std::vector<double> sum(static_cast<size_t>(2 * P), 0.0);
  int64_t tokens = 0;
  ProgressLine progress;
  for (size_t b = 0; b < items.size(); b += batch_size) {
    Sentences batch;
    for (size_t i = b; i < std::min(items.size(), b + batch_size); ++i) batch.push_back(items[i].merged);
    std::vector<Tensor> out = r.encoder->embed(batch, state.get());
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
    const size_t done = std::min(items.size(), b + batch_size);
    progress.update(fmt::format("pseudo-eval: {}/{} sentences", done, items.size()), done == items.size());
  }
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

}  // namespace

WordPairs read_word_pairs(const std::string& path) {
  std::ifstream f(path);
  SA_CHECK(f, "{}: cannot open", path);
  WordPairs pairs;
  std::string line;
  for (int n = 1; read_line(f, line, path, n); ++n) {
    std::istringstream ss(line);
    std::string a, b, extra;
    if (!(ss >> a)) continue;
    SA_CHECK((ss >> b) && !(ss >> extra) && a != b, "{}:{}: expected two different words", path, n);
    pairs.emplace_back(a, b);
  }
  SA_CHECK(!pairs.empty(), "{}: no pairs", path);
  return pairs;
}

int64_t write_pseudo_corpus(const WordPairs& pairs, const std::string& corpus, const std::string& out) {
  std::map<std::string, std::string> merged;
  for (auto& [a, b] : pairs) merged[a] = merged[b] = a + "_" + b;
  std::ostringstream f;
  int64_t replaced = 0;
  for (const std::string& file : expand_glob(corpus))
    for (Sentence& s : read_sentences(file, false)) {
      for (std::string& w : s)
        if (auto it = merged.find(w); it != merged.end()) w = it->second, ++replaced;
      for (size_t i = 0; i < s.size(); ++i) f << (i ? " " : "") << s[i];
      f << "\n";
    }
  write_file_atomically(out, f.str());
  return replaced;
}

PseudoEvalResult pseudo_eval(const SenseModel& r, const WordPairs& pairs, const std::string& corpus,
                             const PseudoEvalOptions& opt) {
  SA_CHECK(r.sense(), "{}: not a SaELMo run", r.run_dir);
  std::vector<int32_t> pseudo_id;
  for (auto& [a, b] : pairs) {
    const std::string p = a + "_" + b;
    SA_CHECK(r.vocab.contains(p), "'{}' is not in the run's vocabulary: train on `bin/senses pseudo-corpus` output", p);
    pseudo_id.push_back(r.vocab.id(p));
  }
  std::array<Tensor, 2> text_mean;
  const std::vector<std::array<Occurrences, 2>> occ = pseudo_occurrences(r, pairs, corpus, opt, text_mean);
  const int64_t P = r.dim();
  // With selection_mean = "word", selection subtracts the word's mean context, which training
  // keeps as sense 0's center, an average over a few hundred steps. The whole representation
  // drifts faster than that, so the stored mean can lie further from the current vectors than a
  // word's spread, which tips every occurrence toward one center. So the word-centred rule is
  // scored twice: with the stored mean, and with the mean of the word's vectors over this text
  // (no labels). With "word_offset" the stored offsets are added to the mean of every token
  // embedded here, which plays the part of the training batch's mean.
  PseudoEvalResult res;
  res.word_means = r.options.word_means();
  const double n = static_cast<double>(pairs.size());
  for (size_t i = 0; i < pairs.size(); ++i) {
    PseudoPairResult& p = res.pairs.emplace_back();
    p.name = pairs[i].first + "_" + pairs[i].second;
    for (int l : occ[i][0].labels) (l ? p.n_b : p.n_a)++;
    for (int d = 0; d < 2; ++d) {
      const SenseHead& h = r.heads[d];
      const Occurrences& o = occ[i][d];
      if (o.size() == 0) continue;
      const Tensor ctx = o.matrix(P);
      const Tensor stored = selection_mean(h.table, r.options, h.proj.mean(), {pseudo_id[i]}, text_mean[d]);
      auto tab = selection_table(h.table, h.proj, pseudo_id[i], o, ctx, stored);
      p.stored[d] = cluster_scores(tab);
      if (d == 0) p.forward_split = tab;
      if (opt.ceiling) {
        p.ceiling[d] = separation_ceiling(o.vectors, P, o.labels, 7 + i);
        NoGrad ng;
        const Tensor pm = h.proj.matrix();
        const std::vector<double> pv = ops::matmul(ctx, pm).values();
        p.ceiling_projected[d] = separation_ceiling(std::vector<float>(pv.begin(), pv.end()), pm.dim(1), o.labels, 7 + i);
      }
      if (!res.word_means) continue;
      NoGrad ng;
      const Tensor inference = ops::mean(ctx, 0, true);
      auto tab_i = selection_table(h.table, h.proj, pseudo_id[i], o, ctx, inference);
      p.inference[d] = cluster_scores(tab_i);
      if (d == 0) p.forward_split = tab_i;
      const Tensor pm = h.proj.matrix();
      res.offset[d] += std::sqrt(ops::sum(ops::square(ops::matmul(ops::sub(inference, stored.to(DType::F32)), pm))).item()) / n;
      res.spread[d] += std::sqrt(ops::sum(ops::square(ops::matmul(ops::sub(ctx, inference), pm))).item() / o.size()) / n;
    }
  }
  return res;
}

void print_pseudo_eval(const PseudoEvalResult& res, int C, bool ceiling) {
  const bool wm = res.word_means;
  std::printf("%-22s %5s %5s | %-25s | %-13s |%s %s\n", "pair", "n_a", "n_b", "forward purity / V", "backward",
              wm ? " inference-mean fwd / bwd |" : "", "forward senses a/b");
  double sum[2][2][3] = {};  // [rule][direction]: purity, V-measure, one-sense baseline
  for (const PseudoPairResult& p : res.pairs) {
    std::string split;  // per selected sense: occurrences of the first / second hidden word (forward)
    for (auto& [row, c] : p.forward_split) split += fmt::format(" s{}:{}/{}", row % C, c[0], c[1]);
    const std::string inf = wm ? fmt::format(" {:.3f} / {:.3f}              |", p.inference[0].purity, p.inference[1].purity) : "";
    std::printf("%-22s %5d %5d | %.3f / %.3f (maj %.3f) | %.3f / %.3f |%s%s\n", p.name.c_str(), p.n_a, p.n_b,
                p.stored[0].purity, p.stored[0].v_measure, p.stored[0].majority, p.stored[1].purity,
                p.stored[1].v_measure, inf.c_str(), split.c_str());
    for (int d = 0; d < 2; ++d)
      for (int k = 0; k < 2; ++k) {
        const ClusterScores& s = k ? p.inference[d] : p.stored[d];
        sum[k][d][0] += s.purity, sum[k][d][1] += s.v_measure, sum[k][d][2] += s.majority;
      }
  }
  const double n = static_cast<double>(res.pairs.size());
  for (int k = 0; k < (wm ? 2 : 1); ++k)
    for (int d = 0; d < 2; ++d)
      std::printf("mean %s%s: purity %.3f (one-sense baseline %.3f), V-measure %.3f\n", d ? "backward" : "forward",
                  k ? " (inference-mode word means)" : "", sum[k][d][0] / n, sum[k][d][2] / n, sum[k][d][1] / n);
  if (wm)
    for (int d = 0; d < 2; ++d)
      std::printf("%s: stored word mean lies %.2f from the inference-mode mean (after P); inference-mode spread %.2f\n",
                  d ? "backward" : "forward", res.offset[d], res.spread[d]);
  if (!ceiling) return;
  // What these vectors could separate at best: unsupervised 2-means and a supervised probe, on
  // the full vectors and on their projection by the selection space's P (what selection sees).
  std::printf("\nceiling (selection vectors, mean-centred per pseudo-word, unit length; 2-means and a nearest-mean\n"
              "probe on the full vectors, 2-means again after the projection P):\n");
  std::printf("%-24s | %-26s | %-26s\n", "pair", "forward 2m / probe / P 2m", "backward 2m / probe / P 2m");
  double csum[2][3] = {};
  for (const PseudoPairResult& p : res.pairs) {
    for (int d = 0; d < 2; ++d)
      csum[d][0] += p.ceiling[d].two_means_purity, csum[d][1] += p.ceiling[d].probe_accuracy,
          csum[d][2] += p.ceiling_projected[d].two_means_purity;
    std::printf("%-24s | %.3f / %.3f / %.3f      | %.3f / %.3f / %.3f\n", p.name.c_str(), p.ceiling[0].two_means_purity,
                p.ceiling[0].probe_accuracy, p.ceiling_projected[0].two_means_purity, p.ceiling[1].two_means_purity,
                p.ceiling[1].probe_accuracy, p.ceiling_projected[1].two_means_purity);
  }
  for (int d = 0; d < 2; ++d)
    std::printf("mean %s: 2-means purity %.3f, nearest-mean probe accuracy %.3f, 2-means purity after P %.3f\n",
                d ? "backward" : "forward", csum[d][0] / n, csum[d][1] / n, csum[d][2] / n);
}

}  // namespace sa
