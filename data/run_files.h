// The files of a run directory, named in one place for the trainer that writes them and the tools
// that read them:
//   config.cfg       the resolved training configuration (TOML, every key)
//   options.json     the model (bilm-tf's keys plus a "sensealign" section)
//   weights.hdf5     the biLM in bilm-tf's layout, rewritten with every checkpoint
//   vocab.txt        the vocabulary, one word per line (bilm-tf)
//   metrics.jsonl    one JSON object per logged step
//   wsd.jsonl        WSD scores of its checkpoints (bin/wsd_eval --log), one JSON object a line
//   checkpoints/ckpt-NNNNNNNN.safetensors   the whole training state at step N
#pragma once
#include <cstdint>
#include <string>
#include <nlohmann/json.hpp>
#include <vector>

namespace sa::run_files {

std::string config(const std::string& dir);
std::string options(const std::string& dir);
std::string weights(const std::string& dir);
std::string vocab(const std::string& dir);
std::string metrics(const std::string& dir);
std::string wsd_log(const std::string& dir);
std::string checkpoint_dir(const std::string& dir);
std::string checkpoint(const std::string& dir, int64_t step);
// The checkpoints present, oldest first (empty when none).
std::vector<std::string> checkpoints(const std::string& dir);
// The newest checkpoint; fails naming the directory when there is none.
std::string newest_checkpoint(const std::string& dir);

// The step of the newest checkpoint: what weights.hdf5 holds and a rerun resumes from (-1: none).
int64_t newest_checkpoint_step(const std::string& dir);
// The tokens seen at a checkpoint's step, as its line in metrics.jsonl logged them (-1: not logged).
int64_t tokens_at_checkpoint(const std::vector<nlohmann::json>& metrics_rows, int64_t step);

// A JSON file parsed, errors naming it ("cannot open", "invalid JSON: ...").
nlohmann::json read_json(const std::string& path);

// metrics.jsonl: one JSON object a line, each with an integer "step". A last line without its
// newline (cut by a kill; a resume trims it) is left out; any other line that is not such an
// object fails naming the file and line.
std::vector<nlohmann::json> read_metrics(const std::string& path);

}  // namespace sa::run_files

namespace sa {

// A model directory as every tool opens it, through one check: our ELMo-family run (options.json
// and weights.hdf5, written with every checkpoint or by bin/export) or a BERT directory
// (config.json with model_type "bert": our BERT runs and Hugging Face's). Errors name the
// directory and what it lacks.
struct RunDirectory {
  enum class Kind { Elmo, Bert };
  std::string dir;
  Kind kind = Kind::Elmo;
  nlohmann::json options;  // options.json (ELMo) or config.json (BERT), parsed
  // Our section of an ELMo run's options.json: how it read its text, SaELMo's settings.
  const nlohmann::json& ours() const;
};
RunDirectory open_run_directory(const std::string& dir);

}  // namespace sa
