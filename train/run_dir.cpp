#include "train/run_dir.h"

#include <algorithm>
#include <filesystem>

#include "train/checkpoint.h"

namespace sa {

namespace fs = std::filesystem;

void take_tensor(const SafetensorsFile& f, const std::string& origin, const std::string& name, Tensor& t) {
  auto it = f.tensors.find(name);
  SA_CHECK(it != f.tensors.end(), "{}: tensor '{}' missing", origin, name);
  SA_CHECK(it->second.shape() == t.shape(), "{}: tensor '{}' is {} but the config needs {} (did the config change?)",
           origin, name, to_string(it->second.shape()), to_string(t.shape()));
  t.copy_from(it->second.to(t.dtype()).to(t.device()));
}

void restore_model(ElmoLM& lm, const SafetensorsFile& f, const std::string& origin, int vocab_size) {
  for (auto& nt : lm.named()) take_tensor(f, origin, nt.name, *nt.tensor);
  for (size_t d = 0; d < lm.heads.size(); ++d) {
    SenseHead& h = lm.heads[d];
    const std::string p = "sense/" + std::to_string(d) + "/";
    take_tensor(f, origin, p + "centers", h.table.centers);
    Tensor en = Tensor::empty({h.table.rows()});
    take_tensor(f, origin, p + "enabled", en);
    std::vector<double> ev = en.values();
    h.table.enabled.assign(ev.begin(), ev.end());
    Tensor proj = h.proj.matrix().clone(), usage = h.usage.to_tensor(vocab_size);
    take_tensor(f, origin, p + "projection", proj);
    take_tensor(f, origin, p + "usage", usage);
    h.usage.restore(usage);
    auto q = f.tensors.find(p + "pca_queue");
    SA_CHECK(q != f.tensors.end(), "{}: tensor '{}pca_queue' missing", origin, p);
    h.proj.restore(q->second, proj, f.metadata.value("pca_fitted", false));
  }
}

LoadedRun load_run(const std::string& dir, Device dev) {
  SA_CHECK(fs::exists(dir + "/config.cfg"), "{}: not a run directory (no config.cfg)", dir);
  TrainConfig c = TrainConfig::load(dir + "/config.cfg");
  Vocab vocab = Vocab::load(dir + "/vocab.txt");
  std::vector<fs::path> ckpts;
  if (fs::exists(dir + "/checkpoints"))
    for (auto& e : fs::directory_iterator(dir + "/checkpoints"))
      if (e.path().extension() == ".safetensors") ckpts.push_back(e.path());
  SA_CHECK(!ckpts.empty(), "{}/checkpoints: no checkpoint yet", dir);
  std::sort(ckpts.begin(), ckpts.end());
  SafetensorsFile f = load_safetensors(ckpts.back().string());
  ElmoLM lm = c.sense.n_context >= 2 ? ElmoLM::init_sense(c.model, c.sense, vocab.size(), c.seed, dev)
                                     : ElmoLM::init(c.model, vocab.size(), c.seed, dev);
  restore_model(lm, f, ckpts.back().string(), vocab.size());
  return {c, vocab, lm, f.metadata.value("step", int64_t{0}), ckpts.back().string()};
}

}  // namespace sa
