// The ELMo architecture as bilm-tf's options.json describes it (keys and defaults as bilm-tf).
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/ops/ops.h"

namespace sa {

struct ElmoOptions {
  // char_cnn
  int char_dim = 16;
  std::vector<std::pair<int, int>> filters = {{1, 32}, {2, 32}, {3, 64}, {4, 128}, {5, 256}, {6, 512}, {7, 1024}};
  int n_highway = 2;
  int n_characters = 261;
  int max_characters_per_token = 50;
  std::string activation = "relu";
  // lstm
  int lstm_dim = 4096;
  int projection_dim = 512;
  int n_layers = 2;
  double cell_clip = 3;
  double proj_clip = 3;
  bool use_skip_connections = true;
  // Ours, how the LSTMs run on CUDA (not in options.json): "auto" takes cuDNN's RNN where it is
  // exact (no clips), "on" takes it whenever the sizes allow, "off" never (the step kernels,
  // exact clips). See ops::LstmPath.
  std::string cudnn = "auto";

  int n_filters() const;
  ops::LstmPath lstm_path() const;
  // The clips the model applies. cuDNN has no proj_clip and its cell clip is not TF's, so "on"
  // defines the model without either wherever cuDNN can run the sizes (projection smaller than
  // the cell), on every device: a run is then the same model whichever device trains or embeds
  // it. options.json records these values.
  bool drops_clips() const;
  double effective_cell_clip() const;
  double effective_proj_clip() const;
  // bilm-tf creates the token projection only when the filter count differs from projection_dim.
  bool use_proj() const { return n_filters() != projection_dim; }

  // Every setting that options.json holds, as v(config key, field, its path in options.json, the
  // value a file without it means, or nullopt when bilm-tf requires it). The config key is the
  // path: "lstm.dim" is options["lstm"]["dim"]. `filters` (a list of pairs) and the ours-only
  // `cudnn` are read and written apart. This list drives config parsing, --set, the echo,
  // options.json and from_json.
  template <typename Visit>
  void visit(Visit&& v) {
    v("char_cnn.embedding.dim", char_dim, "char_cnn.embedding.dim", std::optional<int>());
    v("char_cnn.n_highway", n_highway, "char_cnn.n_highway", std::optional<int>());
    v("char_cnn.n_characters", n_characters, "char_cnn.n_characters", std::optional<int>(261));
    v("char_cnn.max_characters_per_token", max_characters_per_token, "char_cnn.max_characters_per_token",
      std::optional<int>(50));
    v("char_cnn.activation", activation, "char_cnn.activation", std::optional<std::string>("relu"));
    v("lstm.dim", lstm_dim, "lstm.dim", std::optional<int>());
    v("lstm.projection_dim", projection_dim, "lstm.projection_dim", std::optional<int>());
    v("lstm.n_layers", n_layers, "lstm.n_layers", std::optional<int>());
    v("lstm.cell_clip", cell_clip, "lstm.cell_clip", std::optional<double>(0.0));
    v("lstm.proj_clip", proj_clip, "lstm.proj_clip", std::optional<double>(0.0));
    v("lstm.use_skip_connections", use_skip_connections, "lstm.use_skip_connections", std::optional<bool>(false));
  }

  // Reads the "char_cnn" and "lstm" sections; `origin` names the file in errors.
  static ElmoOptions from_json(const nlohmann::json& j, const std::string& origin);
  // bilm-tf layout (merge into a larger options object for training keys), clips effective.
  nlohmann::json to_json() const;
};

}  // namespace sa
