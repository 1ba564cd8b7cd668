#include "data/run_files.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "engine/core/error.h"

namespace sa::run_files {

namespace fs = std::filesystem;

std::string config(const std::string& dir) { return (fs::path(dir) / "config.cfg").string(); }
std::string options(const std::string& dir) { return (fs::path(dir) / "options.json").string(); }
std::string weights(const std::string& dir) { return (fs::path(dir) / "weights.hdf5").string(); }
std::string vocab(const std::string& dir) { return (fs::path(dir) / "vocab.txt").string(); }
std::string metrics(const std::string& dir) { return (fs::path(dir) / "metrics.jsonl").string(); }
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

}  // namespace sa::run_files
