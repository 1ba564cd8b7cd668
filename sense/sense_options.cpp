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
  return {{"n_context", n_context},
          {"cluster_proj_dim", cluster_proj_dim},
          {"pca_sample", pca_sample},
          {"pca_every", pca_every},
          {"pca_push_every", pca_push_every},
          {"pca_queue_steps", pca_queue_steps},
          {"sense_learning_rate", sense_learning_rate},
          {"remove_less_freqent_contexts", remove_less_freqent_contexts},
          {"context_record_window", context_record_window},
          {"contextual_warmup", contextual_warmup},
          {"prune_every", prune_every},
          {"prune_first", prune_first},
          {"center_update", enum_name(center_update)},
          {"sense_negatives", enum_name(negatives)},
          {"sense_negative_budget", enum_name(negative_budget)},
          {"sense_negative_rows_max", negative_rows_max},
          {"split_min_count", split_min_count},
          {"softmax_tables", enum_name(softmax_tables)},
          {"translation_candidates", enum_name(translation_candidates)},
          {"warmup_init", enum_name(warmup_init)},
          {"selection_mean", enum_name(selection_mean)},
          {"select_after_dropout", select_after_dropout}};
}

SenseOptions SenseOptions::from_json(const nlohmann::json& j, const std::string& origin) {
  SenseOptions o;
  try {
    o.n_context = j.at("n_context").get<int>();
    o.cluster_proj_dim = j.at("cluster_proj_dim").get<int>();
    o.pca_sample = j.at("pca_sample").get<int>();
    o.pca_every = j.at("pca_every").get<int>();
    o.pca_push_every = j.value("pca_push_every", 0);  // runs of earlier versions lack the two
    o.pca_queue_steps = j.value("pca_queue_steps", int64_t{0});
    o.sense_learning_rate = j.at("sense_learning_rate").get<double>();
    o.remove_less_freqent_contexts = j.at("remove_less_freqent_contexts").get<double>();
    o.context_record_window = j.at("context_record_window").get<int>();
    o.contextual_warmup = j.at("contextual_warmup").get<int64_t>();
    o.prune_every = j.at("prune_every").get<int64_t>();
    o.prune_first = j.at("prune_first").get<int64_t>();
    o.center_update = parse_enum<CenterUpdate>(j.at("center_update").get<std::string>());
    o.negatives = parse_enum<Negatives>(j.at("sense_negatives").get<std::string>());
    o.warmup_init = parse_enum<WarmupInit>(j.at("warmup_init").get<std::string>());
    o.selection_mean = parse_enum<SelectionMean>(j.at("selection_mean").get<std::string>());
    o.select_after_dropout = j.at("select_after_dropout").get<bool>();
    o.translation_candidates = parse_enum<Translations>(j.value("translation_candidates", std::string("all")));
    // Runs of earlier versions lack these: their settings were the defaults.
    o.negative_budget = parse_enum<NegativeBudget>(j.value("sense_negative_budget", std::string("rows")));
    o.negative_rows_max = j.value("sense_negative_rows_max", int64_t{0});
    o.split_min_count = j.value("split_min_count", int64_t{0});
    o.softmax_tables = parse_enum<TableLayout>(j.value("softmax_tables", std::string("default")));
  } catch (const nlohmann::json::exception& e) {
    fail("{}: invalid sense settings: {}", origin, e.what());
  } catch (const std::invalid_argument& e) {
    fail("{}: invalid sense settings: {}", origin, e.what());
  }
  return o;
}

}  // namespace sa
