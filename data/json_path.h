// Dotted paths into JSON objects ("lstm.dim" is j["lstm"]["dim"]), for the option tables that
// map config keys to outside formats (bilm-tf's options.json, Hugging Face's config.json).
#pragma once
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <type_traits>

#include "engine/core/error.h"

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

// `v` as the number type T when T holds it exactly, else nullopt. nlohmann's get<int>() of 1e88
// or get<uint64_t>() of -1.5 converts out of range, which C++ leaves undefined: outside files
// must not reach it. An integer written as a float (512.0) counts as the integer.
template <typename T>
std::optional<T> json_number(const nlohmann::json& v) {
  static_assert(std::is_arithmetic_v<T> && !std::is_same_v<T, bool>);
  if constexpr (std::is_floating_point_v<T>) {
    if (!v.is_number()) return std::nullopt;
    const double d = v.get<double>();
    if (std::fabs(d) > static_cast<double>(std::numeric_limits<T>::max())) return std::nullopt;
    return static_cast<T>(d);
  } else if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<T>::max())) return std::nullopt;
    return static_cast<T>(u);
  } else if (v.is_number_integer()) {
    const int64_t i = v.get<int64_t>();
    if constexpr (std::is_unsigned_v<T>) {
      if (i < 0 || static_cast<uint64_t>(i) > static_cast<uint64_t>(std::numeric_limits<T>::max())) return std::nullopt;
    } else if (i < std::numeric_limits<T>::min() || i > std::numeric_limits<T>::max()) {
      return std::nullopt;
    }
    return static_cast<T>(i);
  } else if (v.is_number_float()) {
    const double d = v.get<double>();
    // The bounds as doubles: -2^63 is exact; 2^63 (the first value past int64's range) too.
    const double lo = static_cast<double>(std::numeric_limits<T>::min());
    const double past = 2.0 * static_cast<double>(std::numeric_limits<T>::max() / 2 + 1);
    if (!(d >= lo && d < past) || d != std::floor(d)) return std::nullopt;
    return static_cast<T>(d);
  }
  return std::nullopt;
}

// `v` as T: numbers through json_number (an sa::Error naming `what` when T cannot hold it), other
// types as nlohmann reads them (its type_error when the JSON holds another type).
template <typename T>
T json_as(const nlohmann::json& v, const std::string& what) {
  if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) {
    if (std::optional<T> n = json_number<T>(v)) return *n;
    if (v.is_number())
      fail("{} is {}, expected {} from {} to {}", what, v.dump(), std::is_floating_point_v<T> ? "a number" : "an integer",
           std::numeric_limits<T>::lowest(), std::numeric_limits<T>::max());
  }
  return v.get<T>();
}

}  // namespace sa
