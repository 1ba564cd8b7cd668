#include "layers/elmo_options.h"

#include "engine/core/error.h"

namespace sa {

ops::LstmPath ElmoOptions::lstm_path() const {
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
    const auto& cc = j.at("char_cnn");
    o.char_dim = cc.at("embedding").at("dim").get<int>();
    o.filters.clear();
    for (const auto& f : cc.at("filters")) o.filters.emplace_back(f.at(0).get<int>(), f.at(1).get<int>());
    o.n_highway = cc.at("n_highway").get<int>();
    o.n_characters = cc.value("n_characters", 261);
    o.max_characters_per_token = cc.value("max_characters_per_token", 50);
    o.activation = cc.value("activation", std::string("relu"));
    const auto& l = j.at("lstm");
    o.lstm_dim = l.at("dim").get<int>();
    o.projection_dim = l.at("projection_dim").get<int>();
    o.n_layers = l.at("n_layers").get<int>();
    o.cell_clip = l.value("cell_clip", 0.0);
    o.proj_clip = l.value("proj_clip", 0.0);
    o.use_skip_connections = l.value("use_skip_connections", false);
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
  nlohmann::json f = nlohmann::json::array();
  for (auto [w, c] : filters) f.push_back({w, c});
  return {{"char_cnn",
           {{"activation", activation},
            {"embedding", {{"dim", char_dim}}},
            {"filters", f},
            {"max_characters_per_token", max_characters_per_token},
            {"n_characters", n_characters},
            {"n_highway", n_highway}}},
          {"lstm",
           {{"cell_clip", effective_cell_clip()},
            {"dim", lstm_dim},
            {"n_layers", n_layers},
            {"proj_clip", effective_proj_clip()},
            {"projection_dim", projection_dim},
            {"use_skip_connections", use_skip_connections}}}};
}

}  // namespace sa
