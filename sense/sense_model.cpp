#include "sense/sense_model.h"

#include <fstream>

#include "data/run_files.h"
#include "layers/load_encoder.h"

namespace sa {

SenseModel load_sense_model(const std::string& dir, Device dev) {
  SenseModel m;
  m.run_dir = dir;
  m.encoder = load_elmo({dir, "", ""}, dev);
  m.vocab = Vocab::load(run_files::vocab(dir));
  const std::string options = run_files::options(dir);
  const RunDirectory run = open_run_directory(dir);
  const nlohmann::json& ours = run.ours();
  m.lowercase = ours.value("lowercase", false);
  m.train_prefix = ours.value("train_prefix", std::string());
  m.train_prefix_l2 = ours.value("train_prefix_l2", std::string());
  // The biLM from the checkpoint too (weights.hdf5 is its copy), so encoder and heads are one step's.
  const std::string ckpt = run_files::newest_checkpoint(dir);
  SafetensorsFile f = load_safetensors(ckpt);
  std::vector<NamedTensor> params = m.encoder->model.named();
  if (ours.contains("sense")) {
    m.options = SenseOptions::from_json(ours["sense"], options);
    m.heads.reserve(2);  // params below point into the heads
    for (size_t d = 0; d < 2; ++d) {
      SenseHead& h = m.heads.emplace_back(m.vocab.size(), m.options, static_cast<int>(m.dim()), 0, dev);
      if (d == 1 && m.options.shared_tables()) {  // one W and b for both directions, stored under sense/0/
        h.table.W = m.heads[0].table.W, h.table.b = m.heads[0].table.b;
        continue;
      }
      for (NamedTensor& nt : h.params(sense_head_prefix(d))) params.push_back(nt);
    }
  }
  restore_trained_model(f, ckpt, params, m.heads);
  return m;
}

}  // namespace sa
