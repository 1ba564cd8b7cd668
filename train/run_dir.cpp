#include "train/run_dir.h"

#include <algorithm>
#include <filesystem>

#include "train/checkpoint.h"

namespace sa {

namespace fs = std::filesystem;

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
  auto take = [&](const std::string& name, Tensor& t) {
    auto it = f.tensors.find(name);
    SA_CHECK(it != f.tensors.end() && it->second.shape() == t.shape(), "{}: tensor '{}' missing or not {}",
             ckpts.back().string(), name, to_string(t.shape()));
    t.copy_from(it->second.to(t.dtype()).to(t.device()));
  };
  for (auto& nt : lm.named()) take(nt.name, *nt.tensor);
  for (size_t d = 0; d < lm.heads.size(); ++d) {
    SenseHead& h = lm.heads[d];
    const std::string p = "sense/" + std::to_string(d) + "/";
    take(p + "centers", h.table.centers);
    Tensor en = Tensor::empty({h.table.rows()});
    take(p + "enabled", en);
    std::vector<double> ev = en.values();
    h.table.enabled.assign(ev.begin(), ev.end());
    Tensor proj = h.proj.matrix().clone(), usage = h.usage.to_tensor(vocab.size());
    take(p + "projection", proj);
    take(p + "usage", usage);
    h.usage.restore(usage);
    h.proj.restore(f.tensors.at(p + "pca_queue"), proj, f.metadata.value("pca_fitted", false));
  }
  return {c, vocab, lm, f.metadata.value("step", int64_t{0}), ckpts.back().string()};
}

}  // namespace sa
