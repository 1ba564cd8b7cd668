// Reading a run directory back: the resolved config, the vocabulary, and the model being trained
// (with its sense heads for SaELMo) from the newest checkpoint. For train/ tools (bin/export) and
// tests; tools that only embed use load_encoder (layers/load_encoder.h).
#pragma once
#include <string>

#include "data/vocab.h"
#include "train/config.h"
#include "train/elmo_lm.h"

namespace sa {

struct LoadedRun {
  TrainConfig config;
  Vocab vocab;
  ElmoLM lm;
  int64_t step = 0;
  std::string checkpoint;
};

LoadedRun load_run(const std::string& dir, Device dev = Device::cpu());

}  // namespace sa
