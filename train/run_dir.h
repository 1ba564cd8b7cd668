// Reading a run directory back: the resolved config, the vocabulary, and the model (with its
// sense heads for SaELMo) from the latest checkpoint. For tools that use a trained run.
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

struct SafetensorsFile;
// Copies a checkpoint's tensor `name` into t (same shape); fails naming the file otherwise.
void take_tensor(const SafetensorsFile& f, const std::string& origin, const std::string& name, Tensor& t);
// Copies the model of a checkpoint into `lm`: its parameters and, for SaELMo, the centers, enabled
// scores, projection with its queue, and usage windows.
void restore_model(ElmoLM& lm, const SafetensorsFile& f, const std::string& origin, int vocab_size);

}  // namespace sa
