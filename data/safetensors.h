// Checkpoints in the safetensors format (an 8-byte header length, a JSON header naming each
// tensor's dtype, shape and byte range, then the raw little-endian data), readable from PyTorch
// with `safetensors.torch.load_file`. Written to a temporary file, synced and renamed, so a
// crash never leaves a partial checkpoint under the final name.
#pragma once
#include <map>
#include <optional>
#include <nlohmann/json.hpp>
#include <string>
#include <limits>
#include <type_traits>
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
  std::string path;
  std::map<std::string, Tensor> tensors;  // CPU tensors
  nlohmann::json metadata;                // our "sensealign" entry of __metadata__ (an object, or null)

  // A metadata field: `fallback` when absent (without one, absent is damage); CheckpointDamaged
  // naming the file and field when it holds another type (T: bool, int64_t, int or uint64_t).
  template <typename T>
  T meta(const std::string& key, std::optional<T> fallback = std::nullopt) const;
};

// Throws CheckpointDamaged naming the file when it is truncated, malformed or not safetensors.
SafetensorsFile load_safetensors(const std::string& path);

template <typename T>
T SafetensorsFile::meta(const std::string& key, std::optional<T> fallback) const {
  const bool present = metadata.is_object() && metadata.contains(key);
  if (!present && fallback) return *fallback;
  if (!present) throw CheckpointDamaged(fmt::format("{}: metadata without \"{}\"", path, key));
  const nlohmann::json& v = metadata[key];
  bool ok;
  if constexpr (std::is_same_v<T, bool>) ok = v.is_boolean();
  else if constexpr (std::is_unsigned_v<T>) ok = v.is_number_unsigned();
  else if (v.is_number_unsigned()) ok = v.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<T>::max());
  else ok = v.is_number_integer() && v.get<int64_t>() >= std::numeric_limits<T>::min() &&
            v.get<int64_t>() <= std::numeric_limits<T>::max();
  if (!ok) throw CheckpointDamaged(fmt::format("{}: metadata \"{}\" is {}, expected {}", path, key, v.dump(),
                                               std::is_same_v<T, bool> ? "true or false" : "an integer in range"));
  return v.get<T>();
}

// Copies tensor `name` of `f` into t (same shape; converted to t's dtype and device). A missing
// tensor is CheckpointDamaged; another shape is an Error (the run's settings differ).
void take_tensor(const SafetensorsFile& f, const std::string& origin, const std::string& name, Tensor& t);

}  // namespace sa
