// bin/senses: inspect the senses of a trained SaELMo run, and the pseudo-word evaluation.
//   bin/senses list --model RUN --word W [--top K] [--langs en,de] [--min-selections N] [--min-count N]
//                      selection counts, nearest senses (a joint run: nearest in each language)
//   bin/senses plot --model RUN --word W --output F.svg [--top K] [--direction D] [--min-selections N] [--min-count N]
//                      2-D PCA picture, labels laid out without overlaps
//   bin/senses contexts --model RUN --word W [--corpus C] [--per-sense K] [--direction D]
//                      for each live sense, the corpus sentences that selected it most clearly
//   bin/senses html --model RUN --output DIR [--words a,b] [--n-words N]   a static page per word
//                      (senses, usage, neighbours, example contexts, the plot) and an index
//   bin/senses memory [--vocab N --dim P --n-context C --ranks R --sense-tables M]   per-device sense-table
//                                                         memory, before allocating anything
//   bin/senses dump --model RUN --output F [--direction D]   sense vectors, word2vec text, "word#s"
//   bin/senses pseudo-corpus --pairs P --corpus C --output F  merge each pair into one token "a_b"
//   bin/senses pseudo-eval --model RUN --pairs P --corpus C   purity / V-measure of the selected senses
#include <CLI/CLI.hpp>
#include <cctype>
#include <cmath>
#include <numeric>
#include <cstdio>
#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "data/atomic_file.h"
#include "data/corpus.h"
#include "eval/alignment.h"
#include "eval/clustering.h"
#include "eval/label_layout.h"
#include "eval/pseudo_words.h"
#include "eval/sense_contexts.h"
#include "eval/sense_neighbours.h"
#include "eval/svg.h"
#include "sense/projection.h"
#include "sense/sense_model.h"

using namespace sa;

namespace {

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

std::string sense_name(const SenseModel& r, const std::vector<int32_t>& group) {
  return sense_group_name(r.vocab, group, r.options.n_context);
}

// Language names of a joint run ("en,de"), for labels.
std::array<std::string, 2> lang_names(const std::string& spec) {
  const size_t c = spec.find(',');
  SA_CHECK(c != std::string::npos && c > 0 && c + 1 < spec.size(), "--langs {}: expected two names, e.g. en,de", spec);
  return {spec.substr(0, c), spec.substr(c + 1)};
}

void list(SenseModel& r, const std::string& word, int top, const std::string& langs_spec, int min_selections,
          int min_count) {
  SA_CHECK(r.sense(), "{}: not a SaELMo run (n_context = 0)", r.run_dir);
  SA_CHECK(r.vocab.contains(word), "'{}' is not in the vocabulary", word);
  const int w = r.vocab.id(word);
  const std::vector<uint8_t> langs = word_languages(r);
  const auto names = lang_names(langs_spec);
  for (int d = 0; d < 2; ++d) {
    SenseHead& h = r.heads[d];
    const int C = h.table.n_context();
    const std::vector<int> counts = h.usage.sense_counts(w, C);
    const int window = std::accumulate(counts.begin(), counts.end(), 0);
    const Tensor unit = unit_rows(h.table.W);
    const std::vector<uint8_t> candidates = neighbour_candidates(h, min_selections, min_count);
    std::printf("%s direction, '%s':\n", d == 0 ? "forward" : "backward", word.c_str());
    std::vector<int32_t> own;
    for (int s = 0; s < C; ++s)
      if (h.table.is_enabled(h.table.row(w, s))) own.push_back(h.table.row(w, s));
    for (const std::vector<int32_t>& g : collapse_identical(own, unit, C)) {
      int chosen = 0;
      for (int32_t row : g) chosen += counts[static_cast<size_t>(row % C)];
      const std::string name = sense_name(r, g);
      std::printf("  sense %s (score %.3g, %d of the last %d selections%s):", name.substr(name.rfind('#') + 1).c_str(),
                  h.table.enabled[g[0]], chosen, window,
                  g.size() > 1 ? ", identical rows" : "");
      if (langs.empty()) {
        for (const auto& o : nearest_sense_groups(h.table, unit, g[0], top, candidates)) std::printf(" %s", sense_name(r, o).c_str());
      } else {  // a joint run: the nearest senses in each language
        for (int k = 0; k < 2; ++k) {
          std::printf("\n    nearest %s:", names[k].c_str());
          for (const auto& o : nearest_sense_groups(h.table, unit, g[0], top, candidates, &langs, k + 1))
            std::printf(" %s", sense_name(r, o).c_str());
        }
      }
      std::printf("\n");
    }
  }
}

// A 2-D PCA picture of a word's enabled senses and the nearest senses of other words (the paper's
// appendix figures), as SVG: the word's senses in colour, each neighbour in its sense's colour.
// For a joint run, each sense gets its `top` nearest senses in each language; the second
// language's are drawn as squares with italic labels. Identical rows are one point with one
// label ("bank#1,3,5"); labels are laid out so that none overlaps another or leaves the picture.
void plot(SenseModel& r, const std::string& word, int top, int d, const std::string& out, const std::string& langs_spec,
          int min_selections, int min_count) {
  SA_CHECK(r.sense(), "{}: not a SaELMo run (n_context = 0)", r.run_dir);
  SA_CHECK(r.vocab.contains(word), "'{}' is not in the vocabulary", word);
  SenseHead& h = r.heads[d];
  const int w = r.vocab.id(word), C = h.table.n_context();
  const Tensor unit = unit_rows(h.table.W);
  const std::vector<uint8_t> candidates = neighbour_candidates(h, min_selections, min_count);
  std::vector<std::vector<int32_t>> points;  // each point: a group of identical rows
  std::vector<int> group;                    // index of the word's sense a point belongs to; -1: one of them
  const std::vector<uint8_t> langs = word_languages(r);
  const auto names = lang_names(langs_spec);
  std::vector<int32_t> own;
  for (int s = 0; s < C; ++s)
    if (h.table.is_enabled(h.table.row(w, s))) own.push_back(h.table.row(w, s));
  const std::vector<std::vector<int32_t>> own_groups = collapse_identical(own, unit, C);
  for (const auto& g : own_groups) points.push_back(g), group.push_back(-1);
  for (size_t g = 0; g < own_groups.size(); ++g)
    for (int k = 0; k < (langs.empty() ? 1 : 2); ++k)
      for (const auto& o : nearest_sense_groups(h.table, unit, own_groups[g][0], top, candidates,
                                                langs.empty() ? nullptr : &langs, k + 1))
        if (std::none_of(points.begin(), points.end(), [&](const auto& p) { return p[0] == o[0]; }))
          points.push_back(o), group.push_back(static_cast<int>(g));
  // Second-language words are marked.
  auto second = [&](int32_t row) { return !langs.empty() && langs[row / C] == 2; };
  NoGrad ng;
  const int64_t n = static_cast<int64_t>(points.size()), P = unit.dim(1);
  SA_CHECK(n >= 3, "'{}': too few senses and neighbours to plot", word);
  std::vector<int32_t> first_rows;
  for (const auto& p : points) first_rows.push_back(p[0]);
  Tensor pts = ops::gather_rows(unit, Tensor::from(first_rows, {n}));
  PcaProjection pca(P, 2, n, 1);
  pca.push(pts);
  pca.refit();
  std::vector<double> xy = ops::matmul(ops::sub(pts, pca.mean().to(pts.dtype())), pca.matrix().to(pts.dtype())).values();
  double lo[2] = {INFINITY, INFINITY}, hi[2] = {-INFINITY, -INFINITY};
  for (int64_t i = 0; i < n; ++i)
    for (int k = 0; k < 2; ++k) lo[k] = std::min(lo[k], xy[i * 2 + k]), hi[k] = std::max(hi[k], xy[i * 2 + k]);
  // Points keep a wide margin, so that labels fit beside those at the edges.
  const double W = 960, H = 720, title = langs.empty() ? 44 : 62, mx = 150, my = 50;
  auto X = [&](double v) { return mx + (v - lo[0]) / std::max(hi[0] - lo[0], 1e-9) * (W - 2 * mx); };
  auto Y = [&](double v) { return H - my - (v - lo[1]) / std::max(hi[1] - lo[1], 1e-9) * (H - title - 2 * my); };
  static const char* palette[] = {"#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"};
  std::vector<LabelRequest> requests;
  for (int64_t i = 0; i < n; ++i) {
    const bool own_point = group[i] < 0;
    requests.push_back({X(xy[i * 2]), Y(xy[i * 2 + 1]), sense_name(r, points[i]), own_point ? 15.0 : 11.0,
                        own_point ? 7.0 : 4.0});
  }
  const std::vector<PlacedLabel> placed = place_labels(requests, {4, title, W - 4, H - 4});
  SvgWriter f(W, H);
  f.text(10, 26, word + ": senses and nearest senses (" + (d == 0 ? "forward" : "backward") + ", 2-D PCA)", 16);
  if (!langs.empty()) f.text(10, 46, "circles: " + names[0] + ", squares and italics: " + names[1], 12);
  // Markers first, then the labels over them: a label is never hidden under a later point.
  std::vector<const char*> colours;
  for (int64_t i = 0, g = -1; i < n; ++i) {
    if (group[i] < 0) ++g;
    colours.push_back(palette[(group[i] < 0 ? g : group[i]) % 8]);
  }
  for (int64_t i = 0; i < n; ++i) {
    const LabelRequest& q = requests[i];
    const PlacedLabel& p = placed[i];
    if (p.leader) {  // from the point to the nearest edge of the label
      const double lx = std::clamp(q.px, p.box.x0, p.box.x1), ly = std::clamp(q.py, p.box.y0, p.box.y1);
      f.line(q.px, q.py, lx, ly, colours[i], 0.6, "stroke-opacity=\"0.6\"");
    }
    if (second(points[i][0]))
      f.rect(q.px - 4, q.py - 4, 8, 8, colours[i]);
    else
      f.circle(q.px, q.py, q.radius, colours[i]);
  }
  for (int64_t i = 0; i < n; ++i) {
    std::string style = group[i] < 0 ? "font-weight=\"bold\"" : "";
    if (second(points[i][0])) style += std::string(style.empty() ? "" : " ") + "font-style=\"italic\"";
    f.text(placed[i].x, placed[i].y, requests[i].text, requests[i].size, colours[i], style);
  }
  f.save(out);
  const int64_t crowded = std::count_if(placed.begin(), placed.end(), [](const PlacedLabel& p) { return !p.fits; });
  std::printf("senses: %ld points (%s's senses and their %d nearest each) -> %s\n", (long)n, word.c_str(), top, out.c_str());
  if (crowded) std::printf("senses: %ld labels found no free spot; use a smaller --top\n", (long)crowded);
}

void contexts(const SenseModel& r, const std::string& word, const SenseContextOptions& o) {
  const WordContexts wc = sense_contexts(r, word, o);
  std::printf("'%s' (%s): %zu enabled senses, %ld occurrences in %ld sentences of %s\n", word.c_str(),
              o.direction == 0 ? "forward" : "backward", wc.senses.size(), (long)wc.occurrences, (long)wc.sentences,
              (o.corpus.empty() ? r.train_prefix : o.corpus).c_str());
  for (const SenseExamples& e : wc.senses) {
    std::printf("sense %d: chosen by %ld occurrences here\n", e.sense, (long)e.selected);
    for (const SenseContext& c : e.clearest) std::printf("  %.3f  %s\n", c.margin, marked_context(c).c_str());
  }
}

// A page per word (senses, usage, neighbours, the clearest contexts, the plot) and index.html.
void html(SenseModel& r, std::vector<std::string> words, int n_words, const std::string& dir, int direction,
          const SenseContextOptions& co, int top) {
  SA_CHECK(r.sense(), "{}: not a SaELMo run (n_context = 0)", r.run_dir);
  SenseHead& h = r.heads[static_cast<size_t>(direction)];
  const int C = h.table.n_context();
  auto live = [&](int w) {
    int n = 0;
    for (int s = 0; s < C; ++s) n += h.table.is_enabled(h.table.row(w, s));
    return n;
  };
  // By default the most frequent words (the vocabulary's order) with more than one live sense;
  // punctuation and numbers (no letter; any non-ASCII byte counts as one) are left out.
  auto has_letter = [](const std::string& w) {
    return std::any_of(w.begin(), w.end(), [](char c) { return std::isalpha(static_cast<unsigned char>(c)) || (c & 0x80); });
  };
  if (words.empty())
    for (int w = 3; w < r.vocab.size() && static_cast<int>(words.size()) < n_words; ++w)
      if (live(w) > 1 && has_letter(r.vocab.word(w))) words.push_back(r.vocab.word(w));
  SA_CHECK(!words.empty(), "{}: no word has more than one live sense in this direction; name words with --words", r.run_dir);
  std::filesystem::create_directories(dir);
  const Tensor unit = unit_rows(h.table.W);
  const std::vector<uint8_t> candidates = neighbour_candidates(h, 1, 10);
  const std::string style =
      "<style>body{font-family:sans-serif;max-width:1000px;margin:2em auto;color:#222}table{border-collapse:collapse}"
      "td,th{border-bottom:1px solid #ddd;padding:4px 10px;text-align:left;vertical-align:top}mark{background:#ffe08a}"
      "li{margin:3px 0}.m{color:#888;font-size:90%}</style>";
  std::string index = "<!doctype html><meta charset=\"utf-8\"><title>Senses of " + xml_escape(r.run_dir) + "</title>" + style +
                      "<h1>Senses of " + xml_escape(r.run_dir) + "</h1><p>" + (direction == 0 ? "Forward" : "Backward") +
                      " direction. Each word's page shows its live senses, how often training chose each lately, the "
                      "nearest senses of other words, and the corpus sentences that chose each sense most clearly.</p>"
                      "<table><tr><th>word</th><th>live senses</th><th>occurrences read</th></tr>";
  for (const std::string& word : words) {
    SA_CHECK(r.vocab.contains(word), "'{}' is not in the vocabulary", word);
    const int w = r.vocab.id(word);
    const std::string page = "w" + std::to_string(w);
    const WordContexts wc = sense_contexts(r, word, co);
    const std::vector<int> usage = h.usage.sense_counts(w, C);
    std::string plot_html;
    try {
      plot(r, word, top, direction, dir + "/" + page + ".svg", "L1,L2", 1, 10);
      plot_html = "<h2>Picture</h2><img src=\"" + page + ".svg\" width=\"960\" alt=\"2-D PCA of the senses\">";
    } catch (const Error& e) {
      plot_html = "<p class=\"m\">No picture: " + xml_escape(e.what()) + "</p>";
    }
    std::string body = "<!doctype html><meta charset=\"utf-8\"><title>" + xml_escape(word) + "</title>" + style +
                       "<p><a href=\"index.html\">all words</a></p><h1>" + xml_escape(word) + "</h1><p class=\"m\">" +
                       std::to_string(wc.occurrences) + " occurrences in " + std::to_string(wc.sentences) +
                       " sentences read; the usage counts are training's last selections of the word.</p>"
                       "<table><tr><th>sense</th><th>chosen in training (last window)</th><th>chosen here</th><th>nearest senses</th></tr>";
    for (const SenseExamples& e : wc.senses) {
      std::string near;
      for (const auto& g : nearest_sense_groups(h.table, unit, h.table.row(w, e.sense), 8, candidates))
        near.append(near.empty() ? "" : ", ").append(xml_escape(sense_name(r, g)));
      body += "<tr><td>#" + std::to_string(e.sense) + "</td><td>" + std::to_string(usage[static_cast<size_t>(e.sense)]) + "</td><td>" +
              std::to_string(e.selected) + "</td><td>" + near + "</td></tr>";
    }
    body += "</table><h2>Clearest contexts</h2>";
    for (const SenseExamples& e : wc.senses) {
      body += "<h3>sense #" + std::to_string(e.sense) + "</h3><ol>";
      for (const SenseContext& c : e.clearest) {
        std::string line = xml_escape(marked_context(c));
        const std::string mark = std::string(1, '[').append(xml_escape(word)).append("]");
        if (const size_t at = line.find(mark); at != std::string::npos)
          line.replace(at, mark.size(), "<mark>" + xml_escape(word) + "</mark>");
        body += "<li>" + line + " <span class=\"m\">(margin " + fmt::format("{:.3f}", c.margin) + ")</span></li>";
      }
      if (e.clearest.empty()) body += "<li class=\"m\">no occurrence in the text read chose this sense</li>";
      body += "</ol>";
    }
    write_file_atomically(dir + "/" + page + ".html", body + plot_html + "\n");
    index += "<tr><td><a href=\"" + page + ".html\">" + xml_escape(word) + "</a></td><td>" + std::to_string(wc.senses.size()) +
             "</td><td>" + std::to_string(wc.occurrences) + "</td></tr>";
  }
  write_file_atomically(dir + "/index.html", index + "</table>\n");
  std::printf("senses: %zu word pages -> %s/index.html\n", words.size(), dir.c_str());
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
  int min_selections = 1;
  l->add_option("--min-selections", min_selections,
                "neighbours only among senses chosen at least this often in their word's selection window (0: all)")
      ->check(CLI::NonNegativeNumber);
  int min_count = 10;
  l->add_option("--min-count", min_count,
                "neighbours only among words with at least this many selections in their window (0: all)")
      ->check(CLI::NonNegativeNumber);
  auto* pl = app.add_subcommand("plot", "2-D PCA picture (SVG) of a word's senses and their nearest senses");
  pl->add_option("--model", model)->required();
  pl->add_option("--word", word)->required();
  pl->add_option("--top", top, "nearest senses per sense");
  pl->add_option("--direction", direction, "0 forward, 1 backward")->check(CLI::Range(0, 1));
  pl->add_option("--output", out, "SVG file")->required();
  pl->add_option("--langs", langs, "names of a joint run's two languages, e.g. en,de (labels only)");
  pl->add_option("--min-selections", min_selections, "as for list")->check(CLI::NonNegativeNumber);
  pl->add_option("--min-count", min_count, "as for list")->check(CLI::NonNegativeNumber);
  auto* cx = app.add_subcommand("contexts", "for each live sense of a word, the corpus sentences that chose it most clearly");
  SenseContextOptions co;
  cx->add_option("--model", model)->required();
  cx->add_option("--word", word)->required();
  cx->add_option("--corpus", co.corpus, "text to read (default: the run's training corpus)");
  cx->add_option("--per-sense", co.per_sense, "sentences per sense")->check(CLI::PositiveNumber);
  cx->add_option("--max-sentences", co.max_sentences, "sentences holding the word to read")->check(CLI::PositiveNumber);
  cx->add_option("--direction", co.direction, "0 forward, 1 backward")->check(CLI::Range(0, 1));
  auto* ht = app.add_subcommand("html", "a static page per word: senses, usage, neighbours, contexts, the plot");
  std::vector<std::string> html_words;
  int n_words = 30;
  ht->add_option("--model", model)->required();
  ht->add_option("--output", out, "folder for index.html and the pages")->required();
  ht->add_option("--words", html_words, "words (default: the most frequent with more than one live sense)")->delimiter(',');
  ht->add_option("--n-words", n_words, "how many words by default")->check(CLI::PositiveNumber);
  ht->add_option("--corpus", co.corpus, "text for the contexts (default: the run's training corpus)");
  ht->add_option("--per-sense", co.per_sense, "sentences per sense")->check(CLI::PositiveNumber);
  ht->add_option("--max-sentences", co.max_sentences, "sentences holding each word to read")->check(CLI::PositiveNumber);
  ht->add_option("--direction", direction, "0 forward, 1 backward")->check(CLI::Range(0, 1));
  ht->add_option("--top", top, "nearest senses per sense in the pictures");
  auto* mem = app.add_subcommand("memory", "sense-table memory for a vocabulary size, per n_context (nothing allocated)");
  int64_t mem_vocab = 793471;
  int mem_dim = 512, mem_context = 6;
  mem->add_option("--vocab", mem_vocab, "words (default: the paper's 793,471)");
  mem->add_option("--dim", mem_dim, "lstm.projection_dim");
  mem->add_option("--n-context", mem_context, "the configuration's n_context, marked in the table");
  int mem_ranks = 1, mem_tokens = 256 * 20, mem_negatives = 8192;
  std::string mem_mode = "replicated";
  mem->add_option("--ranks", mem_ranks, "data-parallel ranks (mpirun -np)")->check(CLI::PositiveNumber);
  mem->add_option("--sense-tables", mem_mode, "the config's sense_tables: replicated or sharded")
      ->check(CLI::IsMember({"replicated", "sharded"}));
  mem->add_option("--tokens", mem_tokens, "tokens per direction and step over all ranks (batch_size x unroll_steps x "
                  "ranks), for the sharded working tables");
  mem->add_option("--negatives", mem_negatives, "n_negative_samples_batch, for the sharded working tables");
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
      const bool sharded = mem_mode == "sharded";
      const int shards = sharded ? mem_ranks : 1;
      std::printf("sense tables (W, b, their Adagrad accumulators, centers; float32) for %ld words x %d dims, %s\n",
                  (long)mem_vocab, mem_dim,
                  sharded ? fmt::format("sharded over {} rank{}: bytes per rank", mem_ranks, mem_ranks == 1 ? "" : "s").c_str()
                          : fmt::format("replicated: bytes on each of {} rank{}", mem_ranks, mem_ranks == 1 ? "" : "s").c_str());
      std::printf("%9s %14s %18s\n", "n_context", "MiB per table", "MiB both directions");
      for (int c = 1; c <= std::max(8, mem_context); ++c) {
        const double b = SenseTable::bytes_needed(mem_vocab, c, mem_dim, DType::F32, shards) / 1048576.0;
        std::printf("%9d %14.1f %18.1f%s\n", c, b, 2 * b, c == mem_context ? "   <- configured" : "");
      }
      if (sharded) {
        // A step gathers every sense row of its targets' and negatives' words, with centers, and
        // keeps their gradient rows: at most C x (tokens + negatives) rows of about 3P + 2 floats.
        const double rows = static_cast<double>(mem_context) * std::min<int64_t>(mem_vocab, mem_tokens + mem_negatives);
        std::printf("each step's working tables at n_context %d: at most %.1f MiB per direction (%d tokens, %d negatives)\n",
                    mem_context, rows * (3.0 * mem_dim + 2) * 4 / 1048576.0, mem_tokens, mem_negatives);
      }
      return 0;
    }
    SenseModel r = load_sense_model(model);
    if (l->parsed()) list(r, word, top, langs, min_selections, min_count);
    if (pl->parsed()) plot(r, word, top, direction, out, langs, min_selections, min_count);
    if (d->parsed()) dump(r, out, direction);
    if (cx->parsed()) contexts(r, word, co);
    if (ht->parsed()) {
      co.direction = direction;
      html(r, html_words, n_words, out, direction, co, top);
    }
    if (pe->parsed())
      print_pseudo_eval(pseudo_eval(r, read_word_pairs(pairs), corpus, {max_sentences, stateful, ceiling}),
                        r.options.n_context, ceiling);
  } catch (const std::exception& e) {
    return tool_failure("senses", e);
  }
  return 0;
}
