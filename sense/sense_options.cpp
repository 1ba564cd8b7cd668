#include "sense/sense_options.h"

#include <stdexcept>

#include "engine/core/error.h"

namespace sa {

template <>
const std::vector<std::string_view>& enum_names<SenseOptions::CenterUpdate>() {
  static const std::vector<std::string_view> v = {"paper", "released", "per_token"};
  return v;
}
template <>
const std::vector<std::string_view>& enum_names<SenseOptions::Negatives>() {
  static const std::vector<std::string_view> v = {"uniform", "log_uniform", "full"};
  return v;
}
template <>
const std::vector<std::string_view>& enum_names<SenseOptions::WarmupInit>() {
  static const std::vector<std::string_view> v = {"random", "copy", "zero", "data"};
  return v;
}
template <>
const std::vector<std::string_view>& enum_names<SenseOptions::SelectionMean>() {
  static const std::vector<std::string_view> v = {"none", "global", "word", "word_offset"};
  return v;
}

template <>
const std::vector<std::string_view>& enum_names<SenseOptions::Translations>() {
  static const std::vector<std::string_view> v = {"all", "best"};
  return v;
}

template <>
const std::vector<std::string_view>& enum_names<SenseOptions::NegativeBudget>() {
  static const std::vector<std::string_view> v = {"rows", "words"};
  return v;
}

template <>
const std::vector<std::string_view>& enum_names<SenseOptions::TableLayout>() {
  static const std::vector<std::string_view> v = {"default", "shared", "per_direction"};
  return v;
}

template <typename E>
E parse_enum(std::string_view name) {
  const auto& names = enum_names<E>();
  std::string valid;
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return static_cast<E>(i);
    valid += (i ? i + 1 == names.size() ? " or " : ", " : "") + ("\"" + std::string(names[i]) + "\"");
  }
  throw std::invalid_argument("expected " + valid + ", got \"" + std::string(name) + "\"");
}

template SenseOptions::CenterUpdate parse_enum<SenseOptions::CenterUpdate>(std::string_view);
template SenseOptions::Negatives parse_enum<SenseOptions::Negatives>(std::string_view);
template SenseOptions::WarmupInit parse_enum<SenseOptions::WarmupInit>(std::string_view);
template SenseOptions::SelectionMean parse_enum<SenseOptions::SelectionMean>(std::string_view);
template SenseOptions::Translations parse_enum<SenseOptions::Translations>(std::string_view);
template SenseOptions::NegativeBudget parse_enum<SenseOptions::NegativeBudget>(std::string_view);
template SenseOptions::TableLayout parse_enum<SenseOptions::TableLayout>(std::string_view);

nlohmann::json SenseOptions::to_json() const {
  nlohmann::json j = nlohmann::json::object();
  SenseOptions copy = *this;
  copy.visit([&](const char* name, auto& field) {
    if constexpr (std::is_enum_v<std::decay_t<decltype(field)>>)
      j[name] = enum_name(field);
    else
      j[name] = field;
  });
  return j;
}

SenseOptions SenseOptions::from_json(const nlohmann::json& j, const std::string& origin) {
  SenseOptions o;
  try {
    SA_CHECK(j.is_object() && j.contains("n_context"), "{}: the sense settings have no n_context", origin);
    o.visit([&](const char* name, auto& field) {
      using F = std::decay_t<decltype(field)>;
      auto it = j.find(name);
      if (it == j.end()) return;
      try {
        if constexpr (std::is_enum_v<F>)
          field = parse_enum<F>(it->template get<std::string>());
        else
          field = it->template get<F>();
      } catch (const std::exception& e) {
        throw std::invalid_argument(std::string(name) + ": " + e.what());
      }
    });
  } catch (const nlohmann::json::exception& e) {
    fail("{}: invalid sense settings: {}", origin, e.what());
  } catch (const std::invalid_argument& e) {
    fail("{}: invalid sense settings: {}", origin, e.what());
  }
  return o;
}

}  // namespace sa
