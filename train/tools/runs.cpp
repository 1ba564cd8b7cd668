// bin/runs: what a set of run directories holds, one line per run.
//   bin/runs list RUN...   family, steps done / total, tokens seen, last held-out perplexity, and
//                          state: running (a bin/train holds the run), finished, stopped, or damaged
//                          (a checkpoint was found damaged and moved aside)
#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "data/run_files.h"
#include "engine/core/error.h"
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
    // The step of the newest checkpoint: what a rerun resumes from.
    int64_t step = 0;
    bool damaged = false;
    if (fs::exists(run_files::checkpoint_dir(dir)))
      for (const auto& e : fs::directory_iterator(run_files::checkpoint_dir(dir)))
        damaged = damaged || e.path().extension() == ".damaged";
    if (const auto ckpts = run_files::checkpoints(dir); !ckpts.empty()) {
      const std::string name = fs::path(ckpts.back()).stem().string();  // ckpt-NNNNNNNN
      step = std::stoll(name.substr(name.find('-') + 1));
    }
    double heldout = 0;
    if (std::ifstream in(run_files::metrics(dir)); in)
      for (std::string line; std::getline(in, line);) {
        const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
        if (j.is_object() && j.contains("heldout_perplexity")) heldout = j["heldout_perplexity"].get<double>();
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
    const int64_t seen = step * per_step;
    const std::string tokens = per_step == 0 ? "-" : seen < 1000000 ? std::to_string(seen) : fmt::format("{:.2f}M", seen / 1e6);
    const std::string ppl = heldout > 0 ? fmt::format("{:.1f}", heldout) : "-";
    std::printf("%-28s %-10s %17s %12s %10s  %s\n", dir.c_str(), family_name(c).c_str(), steps.c_str(), tokens.c_str(),
                ppl.c_str(), state.c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"What run directories hold"};
  app.require_subcommand(1);
  std::vector<std::string> runs;
  CLI::App* l = app.add_subcommand("list", "one line per run: family, steps, tokens, last held-out perplexity, state");
  l->add_option("runs", runs, "run directories")->required();
  CLI11_PARSE(app, argc, argv);
  try {
    if (l->parsed()) list(runs);
  } catch (const std::exception& e) {
    return tool_failure("runs", e);
  }
  return 0;
}
