#include "eval/encoder_files.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "train/config.h"

namespace sa {

LoadedEncoder load_encoder(const EncoderFiles& f, Device dev) {
  std::string options = f.options, weights = f.weights;
  bool lowercase = false;
  if (!f.run_dir.empty()) {
    options = f.run_dir + "/options.json";
    weights = f.run_dir + "/weights.hdf5";
    const std::string cfg = f.run_dir + "/config.cfg";
    SA_CHECK(std::filesystem::exists(options) && std::filesystem::exists(weights),
             "{}: not a finished run directory (expected options.json and weights.hdf5, written when training ends "
             "or by bin/export)",
             f.run_dir);
    if (std::filesystem::exists(cfg)) lowercase = TrainConfig::load(cfg).lowercase;
  }
  SA_CHECK(!options.empty() && !weights.empty(), "give --model RUN_DIR, or --options and --weights");
  std::ifstream in(options);
  SA_CHECK(in, "{}: cannot open", options);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    fail("{}: invalid JSON: {}", options, e.what());
  }
  ElmoOptions opt = ElmoOptions::from_json(j, options);
  return {ElmoModel::load_bilm(opt, weights, dev), lowercase, f.run_dir.empty() ? weights : f.run_dir};
}

}  // namespace sa
