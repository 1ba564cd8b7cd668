#include "data/run_files.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "data/input_limits.h"
#include "engine/core/error.h"

namespace sa::run_files {

namespace fs = std::filesystem;

std::string config(const std::string& dir) { return (fs::path(dir) / "config.cfg").string(); }
std::string options(const std::string& dir) { return (fs::path(dir) / "options.json").string(); }
std::string weights(const std::string& dir) { return (fs::path(dir) / "weights.hdf5").string(); }
std::string vocab(const std::string& dir) { return (fs::path(dir) / "vocab.txt").string(); }
std::string metrics(const std::string& dir) { return (fs::path(dir) / "metrics.jsonl").string(); }
std::string wsd_log(const std::string& dir) { return (fs::path(dir) / "wsd.jsonl").string(); }
std::string checkpoint_dir(const std::string& dir) { return (fs::path(dir) / "checkpoints").string(); }

std::string checkpoint(const std::string& dir, int64_t step) {
  char b[64];
  std::snprintf(b, sizeof b, "ckpt-%08ld.safetensors", static_cast<long>(step));
  return (fs::path(checkpoint_dir(dir)) / b).string();
}

std::vector<std::string> checkpoints(const std::string& dir) {
  std::vector<std::string> v;
  if (fs::exists(checkpoint_dir(dir)))
    for (auto& e : fs::directory_iterator(checkpoint_dir(dir)))
      if (e.path().extension() == ".safetensors") v.push_back(e.path().string());
  std::sort(v.begin(), v.end());  // zero-padded steps: name order is step order
  return v;
}

std::string newest_checkpoint(const std::string& dir) {
  std::vector<std::string> v = checkpoints(dir);
  SA_CHECK(!v.empty(), "{}: no checkpoint yet", checkpoint_dir(dir));
  return v.back();
}

int64_t newest_checkpoint_step(const std::string& dir) {
  const std::vector<std::string> v = checkpoints(dir);
  if (v.empty()) return -1;
  const std::string name = fs::path(v.back()).stem().string();  // ckpt-NNNNNNNN
  return std::stoll(name.substr(name.find('-') + 1));
}

int64_t tokens_at_checkpoint(const std::vector<nlohmann::json>& metrics_rows, int64_t step) {
  int64_t tokens = -1;
  for (const nlohmann::json& j : metrics_rows)
    if (j.contains("checkpoint") && j["step"].get<int64_t>() == step && j.contains("tokens") &&
        j["tokens"].is_number_integer())
      tokens = j["tokens"].get<int64_t>();
  return tokens;
}

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  SA_CHECK(in, "{}: cannot open", path);
  check_file_size(path, kMaxSettingsBytes, "JSON settings file");
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    fail("{}: invalid JSON: {}", path, e.what());
  }
}

std::vector<nlohmann::json> read_metrics(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  SA_CHECK(in, "{}: cannot open", path);
  std::vector<nlohmann::json> rows;
  std::string line;
  for (int lineno = 1; read_line(in, line, path, lineno); ++lineno) {
    const bool cut = in.eof();  // no newline after it: the line a kill interrupted
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    const bool ok = j.is_object() && j.contains("step") && j["step"].is_number_integer();
    if (!ok && cut) break;
    SA_CHECK(ok, "{}:{}: expected a JSON object with an integer \"step\"", path, lineno);
    rows.push_back(std::move(j));
  }
  return rows;
}

}  // namespace sa::run_files

namespace sa {

const nlohmann::json& RunDirectory::ours() const {
  static const nlohmann::json none = nlohmann::json::object();
  return options.contains("sensealign") ? options["sensealign"] : none;
}

RunDirectory open_run_directory(const std::string& dir) {
  namespace fs = std::filesystem;
  RunDirectory r;
  r.dir = dir;
  const std::string hf = (fs::path(dir) / "config.json").string();
  if (fs::exists(hf)) {
    nlohmann::json j = run_files::read_json(hf);
    if (j.value("model_type", std::string()) == "bert") {
      r.kind = RunDirectory::Kind::Bert;
      r.options = std::move(j);
      return r;
    }
  }
  SA_CHECK(fs::exists(run_files::options(dir)) && fs::exists(run_files::weights(dir)),
           "{}: not a run directory with a checkpoint (expected options.json and weights.hdf5, written with every "
           "checkpoint or by bin/export)",
           dir);
  r.options = run_files::read_json(run_files::options(dir));
  return r;
}

}  // namespace sa
