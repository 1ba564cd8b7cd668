// Checkpoints in the safetensors format (an 8-byte header length, a JSON header naming each
// tensor's dtype, shape and byte range, then the raw little-endian data), readable from PyTorch
// with `safetensors.torch.load_file`. Written to a temporary file, synced and renamed, so a
// crash never leaves a partial checkpoint under the final name.
#pragma once
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/engine.h"

namespace sa {

void save_safetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
                      const nlohmann::json& metadata);

// A checkpoint that cannot be read: truncated, malformed, or missing a tensor. The trainer sets
// such a file aside and resumes from the previous one; other errors stop it.
struct CheckpointDamaged : Error {
  using Error::Error;
};

struct SafetensorsFile {
  std::map<std::string, Tensor> tensors;  // CPU tensors
  nlohmann::json metadata;
};

// Throws CheckpointDamaged naming the file when it is truncated, malformed or not safetensors.
SafetensorsFile load_safetensors(const std::string& path);

// Copies tensor `name` of `f` into t (same shape; converted to t's dtype and device). A missing
// tensor is CheckpointDamaged; another shape is an Error (the run's settings differ).
void take_tensor(const SafetensorsFile& f, const std::string& origin, const std::string& name, Tensor& t);

}  // namespace sa
