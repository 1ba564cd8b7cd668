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

#include "data/atomic_file.h"
#include "data/corpus.h"
#include "eval/alignment.h"
#include "eval/clustering.h"
#include "eval/pseudo_words.h"
#include "sense/projection.h"
#include "sense/sense_model.h"

using namespace sa;

namespace {

std::string html_escape(const std::string& s) {
  std::string o;
  for (char ch : s) o += ch == '<' ? "&lt;" : ch == '>' ? "&gt;" : ch == '&' ? "&amp;" : ch == '"' ? "&quot;" : std::string(1, ch);
  return o;
}

// The language of each word of a joint (bilingual) run's vocabulary: 1 for the first corpus
// (train_prefix), 2 for the second (train_prefix_l2), whichever the word is relatively more
// frequent in (names and numbers occur in both). Empty for a monolingual run.
std::vector<uint8_t> word_languages(const SenseModel& r) {
  if (r.train_prefix_l2.empty()) return {};
  std::vector<double> count[2];
  for (int k = 0; k < 2; ++k) {
    count[k].assign(static_cast<size_t>(r.vocab.size()), 0.0);
    double total = 0;
    for (const std::string& file : expand_glob(k == 0 ? r.train_prefix : r.train_prefix_l2))
      for (const Sentence& s : read_sentences(file, r.lowercase))
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

std::string sense_name(const SenseModel& r, int32_t row) {
  const int C = r.options.n_context;
  return r.vocab.word(row / C) + "#" + std::to_string(row % C);
}

// Language names of a joint run ("en,de"), for labels.
std::array<std::string, 2> lang_names(const std::string& spec) {
  const size_t c = spec.find(',');
  SA_CHECK(c != std::string::npos && c > 0 && c + 1 < spec.size(), "--langs {}: expected two names, e.g. en,de", spec);
  return {spec.substr(0, c), spec.substr(c + 1)};
}

void list(SenseModel& r, const std::string& word, int top, const std::string& langs_spec) {
  SA_CHECK(r.sense(), "{}: not a SaELMo run (n_context = 0)", r.run_dir);
  SA_CHECK(r.vocab.contains(word), "'{}' is not in the vocabulary", word);
  const int w = r.vocab.id(word);
  const std::vector<uint8_t> langs = word_languages(r);
  const auto names = lang_names(langs_spec);
  for (int d = 0; d < 2; ++d) {
    SenseHead& h = r.heads[d];
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
void plot(SenseModel& r, const std::string& word, int top, int d, const std::string& out, const std::string& langs_spec) {
  SA_CHECK(r.sense(), "{}: not a SaELMo run (n_context = 0)", r.run_dir);
  SA_CHECK(r.vocab.contains(word), "'{}' is not in the vocabulary", word);
  SenseHead& h = r.heads[d];
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
  std::ostringstream f;
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
  write_file_atomically(out, f.str());
  std::printf("senses: %ld points (%s's senses and their %d nearest each) -> %s\n", (long)n, word.c_str(), top, out.c_str());
}

void dump(SenseModel& r, const std::string& out, int d) {
  SA_CHECK(r.sense(), "{}: not a SaELMo run", r.run_dir);
  SenseHead& h = r.heads[d];
  std::vector<int32_t> rows = h.table.enabled_rows();
  std::vector<double> w = h.table.W.values();
  const int64_t P = h.table.W.dim(1);
  std::ostringstream f;
  f << rows.size() << " " << P << "\n";
  for (int32_t row : rows) {
    f << r.vocab.word(row / h.table.n_context()) << "#" << row % h.table.n_context();
    for (int64_t k = 0; k < P; ++k) f << " " << static_cast<float>(w[row * P + k]);
    f << "\n";
  }
  write_file_atomically(out, f.str());
  std::printf("senses: %zu sense vectors -> %s\n", rows.size(), out.c_str());
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
      const WordPairs p = read_word_pairs(pairs);
      const int64_t n = write_pseudo_corpus(p, corpus, out);
      std::printf("pseudo-corpus: %zu pairs, %ld occurrences merged -> %s\n", p.size(), (long)n, out.c_str());
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
    SenseModel r = load_sense_model(model);
    if (l->parsed()) list(r, word, top, langs);
    if (pl->parsed()) plot(r, word, top, direction, out, langs);
    if (d->parsed()) dump(r, out, direction);
    if (pe->parsed())
      print_pseudo_eval(pseudo_eval(r, read_word_pairs(pairs), corpus, {max_sentences, stateful, ceiling}),
                        r.options.n_context, ceiling);
  } catch (const std::exception& e) {
    return tool_failure("senses", e);
  }
  return 0;
}
