#include "train/run_dir.h"

#include <filesystem>

#include "data/run_files.h"
#include "train/checkpoint.h"

namespace sa {

LoadedRun load_run(const std::string& dir, Device dev) {
  SA_CHECK(open_run_directory(dir).kind == RunDirectory::Kind::Elmo, "{}: a BERT run; this needs an ELMo run", dir);
  SA_CHECK(std::filesystem::exists(run_files::config(dir)), "{}: not a run directory (no config.cfg)", dir);
  TrainConfig c = TrainConfig::load(run_files::config(dir));
  Vocab vocab = Vocab::load(run_files::vocab(dir));
  const std::string ckpt = run_files::newest_checkpoint(dir);
  ElmoLM lm = ElmoLM::make(c.model, c.sense, vocab.size(), c.seed, dev);
  const int64_t step = restore_model(ckpt, lm);
  return {c, vocab, lm, step, ckpt};
}

}  // namespace sa
