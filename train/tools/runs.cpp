// bin/runs: what a set of run directories holds.
//   bin/runs list RUN...   family, steps done / total, tokens seen, last held-out perplexity, and
//                          state: running (a bin/train holds the run), finished, stopped, or damaged
//                          (a checkpoint was found damaged and moved aside)
//   bin/runs plot RUN... -o curves.svg
//                          training loss, held-out perplexity and tokens/s against tokens seen, one
//                          colour per run, from each run's metrics.jsonl; where a run has wsd.jsonl
//                          (bin/wsd_eval --log), a fourth panel: WSD F1 of its checkpoints
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "data/run_files.h"
#include "engine/core/error.h"
#include "eval/svg.h"
#include "train/config.h"
#include "train/run_lock.h"
#include "train/trainer.h"

using namespace sa;

namespace {

namespace fs = std::filesystem;

std::string family_name(const TrainConfig& c) {
  const bool sense = c.sense.n_context >= 2, joint = !c.train_prefix_l2.empty();
  if (c.model_type == "bert") return sense ? "SaBERT" : "BERT";
  return sense ? (joint ? "Bi-SaELMo" : "SaELMo") : (joint ? "Joint-ELMo" : "ELMo");
}

void list(const std::vector<std::string>& runs) {
  std::printf("%-28s %-10s %17s %12s %10s  %s\n", "run", "family", "steps", "tokens", "held-out", "state");
  for (const std::string& dir : runs) {
    SA_CHECK(fs::exists(run_files::config(dir)), "{}: not a run directory (no config.cfg)", dir);
    const TrainConfig c = TrainConfig::load(run_files::config(dir));
    bool damaged = false;
    if (fs::exists(run_files::checkpoint_dir(dir)))
      for (const auto& e : fs::directory_iterator(run_files::checkpoint_dir(dir)))
        damaged = damaged || e.path().extension() == ".damaged";
    const int64_t step = std::max<int64_t>(0, run_files::newest_checkpoint_step(dir));  // what a rerun resumes from
    double heldout = 0;
    int64_t seen = -1;  // tokens at the newest checkpoint, from its metrics line
    if (fs::exists(run_files::metrics(dir))) {
      try {  // a damaged metrics.jsonl marks its run; the other runs are still listed
        const std::vector<nlohmann::json> rows = run_files::read_metrics(run_files::metrics(dir));
        for (const nlohmann::json& j : rows)
          if (j.contains("heldout_perplexity") && j["heldout_perplexity"].is_number())
            heldout = j["heldout_perplexity"].get<double>();
        seen = run_files::tokens_at_checkpoint(rows, step);
      } catch (const Error& e) {
        damaged = true;
        std::fprintf(stderr, "runs: %s\n", e.what());
      }
    }
    // ELMo's steps are batch x unroll tokens; BERT's hold a varying number of pieces.
    const int64_t per_step = c.model_type == "bert" ? 0 : static_cast<int64_t>(c.batch_size) * c.unroll_steps;
    // BERT's total without n_steps depends on its data (sequences per epoch): unknown here.
    const int64_t total = c.n_steps > 0 ? c.n_steps : per_step > 0 && c.n_train_tokens > 0 ? elmo_total_steps(c, 1) : 0;
    const std::string state = RunLock::held(dir) ? "running"
                              : damaged          ? "damaged"
                              : total > 0 && step >= total ? "finished"
                                                           : "stopped";
    const std::string steps = fmt::format("{}/{}", step, total > 0 ? std::to_string(total) : "?");
    if (seen < 0 && per_step > 0) seen = step * per_step;  // a run from before checkpoints logged it
    const std::string tokens = seen < 0 ? "-" : seen < 1000000 ? std::to_string(seen) : fmt::format("{:.2f}M", seen / 1e6);
    const std::string ppl = heldout > 0 ? fmt::format("{:.1f}", heldout) : "-";
    std::printf("%-28s %-10s %17s %12s %10s  %s\n", dir.c_str(), family_name(c).c_str(), steps.c_str(), tokens.c_str(),
                ppl.c_str(), state.c_str());
  }
}

// One run's curves, x in tokens seen.
struct Curves {
  std::string name;
  std::vector<std::pair<double, double>> loss, heldout, rate;
  // WSD F1 (%) on every test set together, top layer: the paper's setting (all senses + WordNet's
  // first sense) and the lemma-filtered one (+ first sense).
  std::vector<std::pair<double, double>> wsd_paper, wsd_lemma;
};

// The highest numbered layer scored in a wsd.jsonl (wsd_eval logs the top layer by its number).
std::string top_layer(const std::vector<nlohmann::json>& rows) {
  int best = -1;
  for (const nlohmann::json& j : rows) {
    const std::string l = j.value("layer", "");
    if (!l.empty() && std::all_of(l.begin(), l.end(), ::isdigit)) best = std::max(best, std::stoi(l));
  }
  return std::to_string(best);
}

Curves curves_of(const std::string& dir) {
  SA_CHECK(fs::exists(run_files::config(dir)), "{}: not a run directory (no config.cfg)", dir);
  SA_CHECK(fs::exists(run_files::metrics(dir)), "{}: no metrics.jsonl yet (the run has not logged a step)", dir);
  const TrainConfig c = TrainConfig::load(run_files::config(dir));
  const std::vector<nlohmann::json> rows = run_files::read_metrics(run_files::metrics(dir));
  // Tokens seen at a step: the logged count ("tokens"); for lines without one (held-out lines,
  // runs of earlier versions) ELMo's batch x unroll per step, or BERT's rate at the line before.
  const int64_t per_step = c.model_type == "bert" ? 0 : static_cast<int64_t>(c.batch_size) * c.unroll_steps;
  std::map<int64_t, double> known;
  for (const nlohmann::json& j : rows)
    if (j.contains("tokens") && j["tokens"].is_number()) known[j["step"].get<int64_t>()] = j["tokens"].get<double>();
  auto tokens_at = [&](int64_t step) -> double {
    if (auto it = known.find(step); it != known.end()) return it->second;
    if (per_step > 0) return static_cast<double>(step * per_step);
    auto it = known.upper_bound(step);
    if (it == known.begin()) return it == known.end() ? static_cast<double>(step) : it->second * step / it->first;
    --it;
    return it->second * static_cast<double>(step) / static_cast<double>(it->first);
  };
  Curves out{dir, {}, {}, {}, {}, {}};  // named as the user named it
  while (out.name.size() > 1 && out.name.back() == '/') out.name.pop_back();
  for (const nlohmann::json& j : rows) {
    const double x = tokens_at(j["step"].get<int64_t>());
    auto take = [&](const char* key, std::vector<std::pair<double, double>>& series) {
      if (j.contains(key) && j[key].is_number() && std::isfinite(j[key].get<double>())) series.emplace_back(x, j[key].get<double>());
    };
    take("loss", out.loss);
    take("heldout_perplexity", out.heldout);
    take("tokens_per_s", out.rate);
  }
  if (fs::exists(run_files::wsd_log(dir))) {
    const std::vector<nlohmann::json> wsd = run_files::read_metrics(run_files::wsd_log(dir));
    const std::string top = top_layer(wsd);
    std::map<std::string, std::map<double, double>> by_setting;  // a later evaluation of a step wins
    for (const nlohmann::json& j : wsd)
      if (j.value("test", "") == "ALL" && j.value("layer", "") == top && j.contains("f1") && j["f1"].is_number())
        by_setting[j.value("setting", "")][j.contains("tokens") ? j["tokens"].get<double>() : tokens_at(j["step"].get<int64_t>())] =
            100 * j["f1"].get<double>();
    for (const auto& [x, f1] : by_setting["nearest-all-wn1"]) out.wsd_paper.emplace_back(x, f1);
    for (const auto& [x, f1] : by_setting["nearest-lemma-wn1"]) out.wsd_lemma.emplace_back(x, f1);
  }
  return out;
}

// Three panels over one x axis (tokens seen), a legend with one colour per run.
void plot(const std::vector<std::string>& dirs, const std::string& out) {
  std::vector<Curves> runs;
  for (const std::string& d : dirs) runs.push_back(curves_of(d));
  static const char* palette[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"};
  const double legend_rows = static_cast<double>((runs.size() + 2) / 3);
  const double W = 960, left = 90, right = 30, top = 70 + 20 * legend_rows, panel = 210, gap = 70;
  bool wsd = false;
  for (const Curves& r : runs) wsd = wsd || !r.wsd_paper.empty() || !r.wsd_lemma.empty();
  const int n_panels = wsd ? 4 : 3;
  const double H = top + n_panels * panel + (n_panels - 1) * gap + 60;
  double xmax = 0;
  for (const Curves& r : runs)
    for (const auto* s : {&r.loss, &r.heldout, &r.rate, &r.wsd_paper, &r.wsd_lemma})
      for (const auto& [x, y] : *s) xmax = std::max(xmax, x);
  std::string names;
  for (const std::string& d : dirs) names.append(names.empty() ? "" : ", ").append(d);
  SA_CHECK(xmax > 0, "no logged steps to plot in {}", names);
  // The x unit that keeps tick labels short.
  const double xs = xmax >= 2e6 ? 1e6 : xmax >= 2e3 ? 1e3 : 1;
  const std::string xtitle = xs == 1e6 ? "tokens seen (millions)" : xs == 1e3 ? "tokens seen (thousands)" : "tokens seen";
  SvgWriter f(W, H);
  f.text(left, 24, "Training curves against tokens seen", 16, "black", "font-weight=\"bold\"");
  for (size_t i = 0; i < runs.size(); ++i) {  // legend: three runs a row
    const double lx = left + static_cast<double>(i % 3) * (W - left - right) / 3, ly = 44 + 20 * static_cast<double>(i / 3);
    f.line(lx, ly - 4, lx + 24, ly - 4, palette[i % 8], 3);
    f.text(lx + 30, ly, runs[i].name, 12);
  }
  struct Panel {
    const char* title;
    std::vector<std::pair<double, double>> Curves::*series;
    bool log_y;
    std::vector<std::pair<double, double>> Curves::*dashed = nullptr;  // a second series, dashed
  };
  const Panel panels[] = {{"training loss (nats per token, each logged step)", &Curves::loss, false},
                          {"held-out perplexity (log scale)", &Curves::heldout, true},
                          {"training speed (tokens/s since the invocation began)", &Curves::rate, false},
                          {"WSD F1 %, top layer, all test sets: all senses + WordNet first sense (solid), the "
                           "lemma's senses + first sense (dashed)",
                           &Curves::wsd_paper, false, &Curves::wsd_lemma}};
  for (int p = 0; p < n_panels; ++p) {
    const Panel& pn = panels[p];
    const double y0 = top + p * (panel + gap), y1 = y0 + panel;
    double lo = INFINITY, hi = -INFINITY;
    for (const Curves& r : runs)
      for (auto series : {pn.series, pn.dashed})
        if (series)
          for (const auto& [x, y] : r.*series)
            if (!pn.log_y || y > 0)
              lo = std::min(lo, pn.log_y ? std::log10(y) : y), hi = std::max(hi, pn.log_y ? std::log10(y) : y);
    f.text(left, y0 - 10, pn.title, 13, "black", "font-weight=\"bold\"");
    f.rect(left, y0, W - left - right, panel, "none", "stroke=\"#888\"");
    if (!(hi >= lo)) {
      f.text(left + 10, y0 + panel / 2, "no values logged", 12, "#888");
      continue;
    }
    if (hi - lo < 1e-9) lo -= 0.5, hi += 0.5;
    const double pad = (hi - lo) * 0.05;
    lo -= pad, hi += pad;
    auto X = [&](double x) { return left + x / xmax * (W - left - right); };
    auto Y = [&](double y) { return y1 - ((pn.log_y ? std::log10(y) : y) - lo) / (hi - lo) * panel; };
    for (double t : nice_ticks(0, xmax / xs, 8)) {
      f.line(X(t * xs), y1, X(t * xs), y1 + 5, "#444");
      f.text(X(t * xs) - 8, y1 + 18, fmt::format("{:g}", t), 11, "#444");
    }
    f.text(left + (W - left - right) / 2 - 60, y1 + 36, xtitle, 12, "#444");
    // y ticks: round values (on a log axis, round perplexities between the powers of ten).
    std::vector<double> ys;
    if (pn.log_y) {
      for (double v : nice_ticks(std::pow(10, lo), std::pow(10, hi), 5)) ys.push_back(v);
      if (ys.size() < 2) ys = {std::pow(10, lo + pad), std::pow(10, hi - pad)};
    } else {
      ys = nice_ticks(lo, hi, 5);
    }
    for (double v : ys) {
      if (pn.log_y && v <= 0) continue;
      const double y = Y(v);
      if (y < y0 - 0.5 || y > y1 + 0.5) continue;
      f.line(left, y, W - right, y, "#ddd", 1);
      f.text(6, y + 4, fmt::format("{:g}", v), 11, "#444");
    }
    for (size_t i = 0; i < runs.size(); ++i)
      for (auto series : {pn.series, pn.dashed}) {
        if (!series) continue;
        std::vector<std::pair<double, double>> pts;
        for (const auto& [x, y] : runs[i].*series)
          if (!pn.log_y || y > 0) pts.emplace_back(X(x), Y(y));
        // A curve of a few evaluated checkpoints: each point marked.
        if (pn.dashed || pts.size() == 1)
          for (const auto& [px, py] : pts) f.circle(px, py, 3, palette[i % 8]);
        std::string attrs = "data-run=\"" + xml_escape(runs[i].name) + "\" data-panel=\"" + std::to_string(p) + "\"";
        if (series == pn.dashed) attrs += " stroke-dasharray=\"6,4\"";
        f.polyline(pts, palette[i % 8], 1.5, attrs);
      }
  }
  f.save(out);
  std::printf("runs: %zu run%s -> %s\n", runs.size(), runs.size() == 1 ? "" : "s", out.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"What run directories hold"};
  app.require_subcommand(1);
  std::vector<std::string> runs;
  CLI::App* l = app.add_subcommand("list", "one line per run: family, steps, tokens, last held-out perplexity, state");
  l->add_option("runs", runs, "run directories")->required();
  CLI::App* pl = app.add_subcommand(
      "plot", "training loss, held-out perplexity, tokens/s and (where wsd_eval --log wrote wsd.jsonl) WSD F1 against tokens seen (SVG)");
  std::vector<std::string> plot_runs;
  std::string out;
  pl->add_option("runs", plot_runs, "run directories")->required();
  pl->add_option("-o,--output", out, "SVG file")->required();
  CLI11_PARSE(app, argc, argv);
  try {
    if (l->parsed()) list(runs);
    if (pl->parsed()) plot(plot_runs, out);
  } catch (const std::exception& e) {
    return tool_failure("runs", e);
  }
  return 0;
}
