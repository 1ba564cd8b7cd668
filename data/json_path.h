// Dotted paths into JSON objects ("lstm.dim" is j["lstm"]["dim"]), for the option tables that
// map config keys to outside formats (bilm-tf's options.json, Hugging Face's config.json).
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace sa {

// The value at `path`, or null when a step is missing or not an object.
inline const nlohmann::json* json_at(const nlohmann::json& j, const std::string& path) {
  const nlohmann::json* at = &j;
  size_t from = 0;
  while (true) {
    const size_t dot = path.find('.', from);
    const std::string step = path.substr(from, dot == std::string::npos ? std::string::npos : dot - from);
    if (!at->is_object() || !at->contains(step)) return nullptr;
    at = &(*at)[step];
    if (dot == std::string::npos) return at;
    from = dot + 1;
  }
}

// Sets the value at `path`, creating the objects on the way.
template <typename T>
void json_set(nlohmann::json& j, const std::string& path, const T& value) {
  nlohmann::json* at = &j;
  size_t from = 0;
  for (size_t dot; (dot = path.find('.', from)) != std::string::npos; from = dot + 1) at = &(*at)[path.substr(from, dot - from)];
  (*at)[path.substr(from)] = value;
}

}  // namespace sa
