#include "layers/elmo_options.h"

#include "data/json_path.h"
#include "engine/core/error.h"

namespace sa {

ops::LstmPath ElmoOptions::lstm_path() const {
  if (cudnn == "stacked") return ops::LstmPath::Stacked;
  return cudnn == "on" ? ops::LstmPath::Cudnn : cudnn == "off" ? ops::LstmPath::Steps : ops::LstmPath::Auto;
}

bool ElmoOptions::drops_clips() const { return cudnn == "on" && ops::cudnn_lstm_fits(lstm_dim, projection_dim); }
double ElmoOptions::effective_cell_clip() const { return drops_clips() ? 0.0 : cell_clip; }
double ElmoOptions::effective_proj_clip() const { return drops_clips() ? 0.0 : proj_clip; }

int ElmoOptions::n_filters() const {
  int n = 0;
  for (auto [w, c] : filters) n += c;
  return n;
}

ElmoOptions ElmoOptions::from_json(const nlohmann::json& j, const std::string& origin) {
  ElmoOptions o;
  try {
    o.visit([&](const char*, auto& field, const char* path, const auto& missing) {
      const nlohmann::json* at = json_at(j, path);
      SA_CHECK(at || missing, "{}: not a valid bilm-tf options file: {} is missing", origin, path);
      const std::string what = fmt::format("{}: not a valid bilm-tf options file: {}", origin, path);
      field = at ? json_as<std::decay_t<decltype(field)>>(*at, what) : *missing;
    });
    const nlohmann::json* filters = json_at(j, "char_cnn.filters");
    SA_CHECK(filters, "{}: not a valid bilm-tf options file: char_cnn.filters is missing", origin);
    o.filters.clear();
    const std::string what = fmt::format("{}: not a valid bilm-tf options file: char_cnn.filters", origin);
    for (const auto& f : *filters) o.filters.emplace_back(json_as<int>(f.at(0), what), json_as<int>(f.at(1), what));
  } catch (const nlohmann::json::exception& e) {
    fail("{}: not a valid bilm-tf options file: {}", origin, e.what());
  }
  SA_CHECK(o.max_characters_per_token == 50, "{}: max_characters_per_token must be 50 (got {})", origin,
           o.max_characters_per_token);
  SA_CHECK(o.n_characters == 261 || o.n_characters == 262, "{}: n_characters must be 261 or 262 (got {})", origin,
           o.n_characters);
  SA_CHECK(o.activation == "relu" || o.activation == "tanh", "{}: char_cnn activation must be relu or tanh", origin);
  SA_CHECK(!o.filters.empty() && o.lstm_dim > 0 && o.projection_dim > 0 && o.n_layers > 0,
           "{}: filters, lstm dim, projection_dim and n_layers must be positive", origin);
  return o;
}

nlohmann::json ElmoOptions::to_json() const {
  nlohmann::json j = nlohmann::json::object();
  const_cast<ElmoOptions&>(*this).visit(
      [&](const char*, const auto& field, const char* path, const auto&) { json_set(j, path, field); });
  nlohmann::json f = nlohmann::json::array();
  for (auto [w, c] : filters) f.push_back({w, c});
  json_set(j, "char_cnn.filters", f);
  // The clips the model applies (drops_clips).
  json_set(j, "lstm.cell_clip", effective_cell_clip());
  json_set(j, "lstm.proj_clip", effective_proj_clip());
  return j;
}

}  // namespace sa
