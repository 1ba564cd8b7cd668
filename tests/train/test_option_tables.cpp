// The option structs' key tables (ElmoOptions::visit, BertConfig::visit): every setting changed
// through --set survives the config echo, the outside file (bilm-tf's options.json, Hugging
// Face's config.json) and reading that file back, and every one is a config key.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "data/json_path.h"
#include "tests/test_util.h"
#include "train/config.h"

namespace sa {
namespace {

// Each visited setting's value, by its outside name (options.json path or config.json key).
template <typename Options>
nlohmann::json values(Options o) {
  nlohmann::json j = nlohmann::json::object();
  o.visit([&](const char*, const auto& f, const char* outside, const auto&) { j[outside] = f; });
  return j;
}

// --set lines giving every setting with a config key another valid value.
template <typename Options>
std::vector<std::string> changed_settings(Options o, int& n) {
  std::vector<std::string> sets;
  n = 0;
  o.visit([&](const char* name, const auto& f, const char*, const auto&) {
    if (!name) return;
    using F = std::decay_t<decltype(f)>;
    std::string v;
    if constexpr (std::is_same_v<F, bool>)
      v = f ? "false" : "true";
    else if constexpr (std::is_same_v<F, std::string>)
      v = f == "relu" ? "\"tanh\"" : "\"relu\"";
    else if constexpr (std::is_same_v<F, double>)
      v = fmt::format("{}", f / 2);
    else if (std::string(name) == "char_cnn.max_characters_per_token")
      return;  // bilm-tf's value, the only one allowed
    else if (std::string(name) == "char_cnn.n_characters")
      v = f == 261 ? "262" : "261";
    else
      v = fmt::format("{}", f * 2);
    sets.push_back(std::string(name) + "=" + v);
    ++n;
  });
  return sets;
}

TEST(OptionTables, EveryElmoSettingRoundTripsThroughOptionsJson) {
  int n = 0;
  const std::vector<std::string> sets = changed_settings(ElmoOptions{}, n);
  EXPECT_EQ(n, 10);  // 11 settings, max_characters_per_token fixed at 50
  const TrainConfig c = TrainConfig::load("configs/bench-small.cfg", sets);
  const nlohmann::json defaults = values(TrainConfig::load("configs/bench-small.cfg").model), loaded = values(c.model);
  int changed = 0;
  for (auto& [k, v] : defaults.items()) changed += loaded.at(k) != v;
  EXPECT_EQ(changed, 10) << loaded.dump();
  // The echo (config.cfg in a run directory) reads back the same settings.
  const std::string echo = testing::temp_file("elmo-roundtrip.cfg", c.to_toml());
  EXPECT_EQ(values(TrainConfig::load(echo).model), loaded);
  // options.json holds each at its path, and reads back the same.
  const nlohmann::json options = c.bilm_options(100);
  for (auto& [path, v] : loaded.items()) {
    ASSERT_TRUE(json_at(options, path)) << path;
    EXPECT_EQ(*json_at(options, path), v) << path;
  }
  EXPECT_EQ(values(ElmoOptions::from_json(options, "options.json")), loaded);
  // Every setting is a config key.
  const std::vector<std::string> keys = TrainConfig::keys();
  ElmoOptions{}.visit([&](const char* name, const auto&, const char*, const auto&) {
    EXPECT_NE(std::find(keys.begin(), keys.end(), name), keys.end()) << name;
  });
  // A file without a required setting names it.
  nlohmann::json bad = options;
  bad["lstm"].erase("projection_dim");
  EXPECT_TRUE(testing::contains(testing::error_of([&] { ElmoOptions::from_json(bad, "x/options.json"); }),
                                "x/options.json: not a valid bilm-tf options file: lstm.projection_dim is missing"));
}

TEST(OptionTables, EveryBertSettingRoundTripsThroughConfigJson) {
  int n = 0;
  const std::vector<std::string> sets = changed_settings(BertConfig{}, n);
  EXPECT_EQ(n, 8);  // vocab_size and layer_norm_eps have no config key
  const TrainConfig c = TrainConfig::load("configs/bert-small.cfg", sets);
  const nlohmann::json defaults = values(TrainConfig::load("configs/bert-small.cfg").bert), loaded = values(c.bert);
  int changed = 0;
  for (auto& [k, v] : defaults.items()) changed += loaded.at(k) != v;
  EXPECT_EQ(changed, 8) << loaded.dump();
  const std::string echo = testing::temp_file("bert-roundtrip.cfg", c.to_toml());
  EXPECT_EQ(values(TrainConfig::load(echo).bert), loaded);
  // config.json: the settings with their Hugging Face names, the ones without a config key too.
  BertConfig b = c.bert;
  b.vocab_size = 123, b.layer_norm_eps = 1e-6;
  const std::string path = testing::temp_file("bert-roundtrip-config.json", "");
  b.save_hf_json(path);
  const nlohmann::json hf = nlohmann::json::parse(std::ifstream(path));
  const nlohmann::json written = values(b);
  for (auto& [key, v] : written.items()) EXPECT_EQ(hf.at(key), v) << key;
  EXPECT_EQ(values(BertConfig::from_hf_json(path)), written);
}

// Outside files give numbers a field cannot hold (1e88 for an int, -1 for a size): nlohmann's
// get<int>() converts them out of range, which C++ leaves undefined. Refused, naming the field.
TEST(OptionTables, NumbersAFieldCannotHoldAreRefusedByName) {
  EXPECT_EQ(json_number<int>(nlohmann::json(512.0)), 512);
  EXPECT_EQ(json_number<int>(nlohmann::json(-2147483648.0)), std::numeric_limits<int>::min());
  EXPECT_FALSE(json_number<int>(nlohmann::json(2147483648.0)));
  EXPECT_FALSE(json_number<int>(nlohmann::json(4.4e87)));
  EXPECT_FALSE(json_number<int>(nlohmann::json(3.5)));
  EXPECT_FALSE(json_number<int>(nlohmann::json(int64_t{1} << 31)));
  EXPECT_FALSE(json_number<int>(nlohmann::json(uint64_t{1} << 63)));
  EXPECT_FALSE(json_number<uint64_t>(nlohmann::json(-1)));
  EXPECT_FALSE(json_number<uint64_t>(nlohmann::json(-0.5)));
  EXPECT_FALSE(json_number<uint64_t>(nlohmann::json(18446744073709551616.0)));  // 2^64
  EXPECT_EQ(json_number<uint64_t>(nlohmann::json(uint64_t{1} << 63)), uint64_t{1} << 63);
  EXPECT_FALSE(json_number<int64_t>(nlohmann::json(9223372036854775808.0)));  // 2^63
  EXPECT_FALSE(json_number<float>(nlohmann::json(1e300)));
  EXPECT_EQ(json_number<double>(nlohmann::json(1e300)), 1e300);
  EXPECT_FALSE(json_number<int>(nlohmann::json("512")));

  nlohmann::json options = ElmoOptions{}.to_json();
  options["char_cnn"]["n_highway"] = 4.4e87;
  EXPECT_TRUE(testing::contains(testing::error_of([&] { ElmoOptions::from_json(options, "options.json"); }), "options.json: not a valid bilm-tf options file: char_cnn.n_highway is 4.4e+87, expected an integer"));
  options = ElmoOptions{}.to_json();
  options["char_cnn"]["filters"][0][1] = -1e30;
  EXPECT_TRUE(testing::contains(testing::error_of([&] { ElmoOptions::from_json(options, "options.json"); }), "char_cnn.filters is -1e+30"));
  options = ElmoOptions{}.to_json();
  options["lstm"]["dim"] = 4096.0;  // an integer written as a float
  EXPECT_EQ(ElmoOptions::from_json(options, "options.json").lstm_dim, 4096);

  const std::string path = testing::temp_file("bert-out-of-range.json", "");
  BertConfig{}.save_hf_json(path);
  nlohmann::json hf = nlohmann::json::parse(std::ifstream(path));
  hf["num_attention_heads"] = 1e30;
  testing::temp_file("bert-out-of-range.json", hf.dump());
  EXPECT_TRUE(testing::contains(testing::error_of([&] { BertConfig::from_hf_json(path); }), "invalid BERT config: num_attention_heads is 1e+30"));
}

}  // namespace
}  // namespace sa
