// The model families bin/train knows, by the config's `model` key: the one place that maps a
// family's name to its code. Adding a family is one entry here and the family's own files
// (docs/design.md, "Adding a model family").
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "train/config.h"
#include "train/train_loop.h"

namespace sa {

struct ModelFamilyInfo {
  const char* model;        // the config's `model` value
  const char* description;  // for messages
  // Builds the family's state for a run (restoring its newest checkpoint); `resolved` is the
  // config the run directory records.
  std::unique_ptr<ModelFamily> (*make)(const TrainConfig& c, TrainConfig& resolved, const RunOutput& out);
  // The family's own config checks (its keys' ranges, the options it does not support); may be null.
  void (*validate)(const TrainConfig& c, const ConfigCheck& checks);
  // bin/export: a run directory's newest checkpoint in the format the family's users load.
  void (*export_run)(const std::string& run_dir, const std::string& out_dir);
  // One step's batch in words, for bench train ("32x20 tokens").
  std::string (*batch_shape)(const TrainConfig& c);
  bool data_parallel;  // trains under mpirun
  bool gemm_report;    // bench train can time its step's GEMMs at the raw BLAS's speed (train/step_flops.h)
  bool pytorch_peer;   // bench train's PyTorch peer trains the same model
};

const std::vector<ModelFamilyInfo>& model_families();
// The family of `model` ("elmo", "bert"), or null.
const ModelFamilyInfo* find_model_family(const std::string& model);
// The family of `model`; an error naming the known ones otherwise.
const ModelFamilyInfo& model_family(const std::string& model);
// The known names, for messages: "\"elmo\" or \"bert\"".
std::string model_family_names();

// bin/train: trains (or resumes) the run that `c` describes, whatever its family.
TrainResult train_model(const TrainConfig& c, const TrainOptions& opts = {});

}  // namespace sa
