#include "train/run_session.h"

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "data/atomic_file.h"
#include "data/run_files.h"
#include "data/safetensors.h"

namespace sa {

namespace fs = std::filesystem;

RunSession::RunSession(const TrainConfig& c, TrainConfig& cfg) : dir_(c.run_dir) {
  SA_CHECK(!fs::exists(dir_) || fs::is_directory(dir_), "{}: Not a directory (run_dir names a file)", dir_);
  fs::create_directories(dir_);
  lock_ = std::make_unique<RunLock>(dir_);
  // Temporaries a killed run left (their final files are intact): nothing reads them.
  for (const std::string& d : {dir_, run_files::checkpoint_dir(dir_)})
    if (fs::is_directory(d))
      for (auto& e : fs::directory_iterator(d))
        if (e.path().extension() == ".tmp") fs::remove(e.path());
  // A resumed run is defined by its config.cfg: refuse changes before writing anything.
  cfg = c;
  if (fs::exists(run_files::config(dir_))) {
    const TrainConfig saved = TrainConfig::load(run_files::config(dir_));
    const std::vector<std::string> refused = c.refused_changes(saved);
    std::string keys, changes;
    for (const std::string& k : TrainConfig::resumable_keys()) keys += (keys.empty() ? "" : ", ") + k;
    for (const std::string& r : refused) changes += "\n  " + r;
    SA_CHECK(refused.empty(),
             "{}: this run was started with other settings, which a resumed run must keep:{}\nOnly these may change "
             "on resume: {}. For other settings, train into a new run_dir.",
             run_files::config(dir_), changes, keys);
    if (cfg.n_train_tokens == 0) cfg.n_train_tokens = saved.n_train_tokens;
  }
  fs::create_directories(run_files::checkpoint_dir(dir_));
}

void RunSession::open_metrics(int64_t step) {
  const fs::path path = run_files::metrics(dir_);
  if (fs::exists(path)) {  // lines of steps after the checkpoint resumed from, and a line cut by a kill
    std::ifstream in(path);
    std::string kept, line;
    while (std::getline(in, line)) {
      const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
      if (!j.is_object() || !j.contains("step") || !j["step"].is_number_integer() || j["step"].get<int64_t>() > step)
        continue;
      kept += line + "\n";
      if (j.contains("tokens") && j["tokens"].is_number_integer()) tokens_before_ = j["tokens"].get<int64_t>();
    }
    write_file_atomically(path.string(), kept);
  }
  metrics_.open(path, std::ios::app);
  SA_CHECK(metrics_, "{}: cannot open for appending ({})", path.string(), std::strerror(errno));
}

void RunSession::log(const nlohmann::json& j) {
  metrics_ << j.dump() << "\n" << std::flush;
  SA_CHECK(metrics_.good(), "{}: write failed ({})", run_files::metrics(dir_), std::strerror(errno));
}

std::pair<std::string, bool> RunSession::restore_newest(const std::function<void(const std::string&)>& restore,
                                                        const std::function<void()>& reset) const {
  std::vector<std::string> ckpts = run_files::checkpoints(dir_);
  bool fell_back = false;
  while (!ckpts.empty()) {
    try {
      restore(ckpts.back());
      return {ckpts.back(), fell_back};
    } catch (const CheckpointDamaged& e) {
      const std::string aside = ckpts.back() + ".damaged";
      fs::rename(ckpts.back(), aside);
      std::fprintf(stderr, "train: %s\ntrain: moved it aside to %s\n", e.what(), aside.c_str());
      ckpts.pop_back();
      SA_CHECK(!ckpts.empty(), "{}: no intact checkpoint left (the damaged ones end in .damaged); move them away to "
               "start this run over", run_files::checkpoint_dir(dir_));
      std::fprintf(stderr, "train: resuming from the previous checkpoint, %s\n", ckpts.back().c_str());
      reset();
      fell_back = true;
    }
  }
  return {"", false};
}

void RunSession::prune_checkpoints(int keep) const {
  std::vector<std::string> all = run_files::checkpoints(dir_);
  for (size_t i = 0; i + static_cast<size_t>(keep) < all.size(); ++i) fs::remove(all[i]);
}

std::string clock_str(double s) {
  char b[32];
  int t = static_cast<int>(s);
  if (t >= 3600)
    std::snprintf(b, sizeof b, "%d:%02d:%02d", t / 3600, t / 60 % 60, t % 60);
  else
    std::snprintf(b, sizeof b, "%d:%02d", t / 60, t % 60);
  return b;
}

}  // namespace sa
