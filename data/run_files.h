// The files of a run directory, named in one place for the trainer that writes them and the tools
// that read them:
//   config.cfg       the resolved training configuration (TOML, every key)
//   options.json     the model (bilm-tf's keys plus a "sensealign" section)
//   weights.hdf5     the biLM in bilm-tf's layout, rewritten with every checkpoint
//   vocab.txt        the vocabulary, one word per line (bilm-tf)
//   metrics.jsonl    one JSON object per logged step
//   checkpoints/ckpt-NNNNNNNN.safetensors   the whole training state at step N
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace sa::run_files {

std::string config(const std::string& dir);
std::string options(const std::string& dir);
std::string weights(const std::string& dir);
std::string vocab(const std::string& dir);
std::string metrics(const std::string& dir);
std::string checkpoint_dir(const std::string& dir);
std::string checkpoint(const std::string& dir, int64_t step);
// The checkpoints present, oldest first (empty when none).
std::vector<std::string> checkpoints(const std::string& dir);
// The newest checkpoint; fails naming the directory when there is none.
std::string newest_checkpoint(const std::string& dir);

}  // namespace sa::run_files
