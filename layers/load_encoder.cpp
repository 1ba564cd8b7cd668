#include "layers/load_encoder.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "data/run_files.h"
#include "layers/bert_encoder.h"

namespace sa {

std::unique_ptr<ElmoEncoder> load_elmo(const EncoderSource& s, Device dev) {
  std::string options = s.options, weights = s.weights;
  nlohmann::json j;
  if (!s.run_dir.empty()) {
    RunDirectory r = open_run_directory(s.run_dir);
    SA_CHECK(r.kind == RunDirectory::Kind::Elmo, "{}: a BERT directory; this needs an ELMo or SaELMo run", s.run_dir);
    options = run_files::options(s.run_dir), weights = run_files::weights(s.run_dir), j = std::move(r.options);
  } else {
    SA_CHECK(!options.empty() && !weights.empty(), "give --model RUN_DIR, or --options and --weights");
    j = run_files::read_json(options);
  }
  auto enc = std::make_unique<ElmoEncoder>(ElmoModel::load_bilm(ElmoOptions::from_json(j, options), weights, dev));
  // Our runs record how they were trained next to bilm-tf's keys; a run directory must have them.
  SA_CHECK(s.run_dir.empty() || j.contains("sensealign"),
           "{}: written by an older SenseAlign (no \"sensealign\" section); rerun the run's bin/train command once "
           "to rewrite it",
           options);
  enc->lowercase = j.contains("sensealign") && j["sensealign"].value("lowercase", false);
  enc->origin = s.run_dir.empty() ? weights : s.run_dir;
  return enc;
}

std::vector<std::string> encoder_files(const EncoderSource& s) {
  if (s.run_dir.empty()) return {s.options, s.weights};
  if (!is_bert_dir(s.run_dir)) return {run_files::options(s.run_dir), run_files::weights(s.run_dir)};
  std::vector<std::string> files = {s.run_dir + "/config.json", s.run_dir + "/model.safetensors", s.run_dir + "/vocab.txt"};
  if (std::filesystem::exists(s.run_dir + "/config.cfg")) files.push_back(s.run_dir + "/config.cfg");  // our run's lowercasing
  return files;
}

std::unique_ptr<ContextualEncoder> load_encoder(const EncoderSource& s, Device dev) {
  if (!s.run_dir.empty() && open_run_directory(s.run_dir).kind == RunDirectory::Kind::Bert) {
    SA_CHECK(s.pieces == "mean" || s.pieces == "first", "--pieces {}: expected mean or first", s.pieces);
    return load_bert_encoder(s.run_dir, dev, s.pieces == "first" ? PiecePooling::First : PiecePooling::Mean);
  }
  return load_elmo(s, dev);
}

}  // namespace sa
