#include "train/config.h"

#include "data/input_limits.h"

#include "train/families.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <sstream>
#include <toml++/toml.h>

#include "data/corpus.h"
#include "engine/core/error.h"
#include "train/default_corpus.h"

namespace sa {

void ConfigCheck::check(bool ok, const std::string& key, const std::string& what) const {
  SA_CHECK(ok, "{}: {} {}", where_(key), key, what);
}
void ConfigCheck::positive(const std::string& key, double v) const {
  check(v > 0, key, fmt::format("must be positive (got {})", v));
}
void ConfigCheck::non_negative(const std::string& key, double v) const {
  check(v >= 0, key, fmt::format("must be >= 0 (got {})", v));
}

namespace {

// One entry per key: its dotted name, its TOML type, how to set it and how to print it.
struct Key {
  std::string name;
  const char* type;
  std::function<void(TrainConfig&, const toml::node&)> set;
  std::function<void(const TrainConfig&, toml::table&)> put;
};

template <typename T>
std::optional<T> as(const toml::node& n) {
  if constexpr (std::is_same_v<T, double>) {
    if (auto v = n.value<double>()) return *v;  // integers are accepted as floats
  } else {
    if (auto v = n.value_exact<T>()) return *v;
  }
  return std::nullopt;
}

template <typename T, typename Get>
Key scalar(std::string name, const char* type, Get get) {
  return Key{name, type,
             [name, type, get](TrainConfig& c, const toml::node& n) {
               auto v = as<T>(n);
               if (!v) throw std::invalid_argument(std::string("expected ") + type);
               get(c) = static_cast<std::remove_reference_t<decltype(get(c))>>(*v);
             },
             [name, get](const TrainConfig& c, toml::table& t) {
               auto& cc = const_cast<TrainConfig&>(c);
               using V = std::remove_reference_t<decltype(get(cc))>;
               if constexpr (std::is_same_v<V, std::string> || std::is_same_v<V, bool> || std::is_same_v<V, double>)
                 t.insert_or_assign(name, get(cc));
               else
                 t.insert_or_assign(name, static_cast<int64_t>(get(cc)));
             }};
}

// A key whose string value names an enum value (sense/sense_options.h), parsed once here.
template <typename E, typename Get>
Key enumerated(std::string name, Get get) {
  return Key{name, "a string",
             [get](TrainConfig& c, const toml::node& n) {
               auto v = n.value_exact<std::string>();
               if (!v) throw std::invalid_argument("expected a string");
               get(c) = parse_enum<E>(*v);
             },
             [name, get](const TrainConfig& c, toml::table& t) {
               t.insert_or_assign(name, enum_name(get(const_cast<TrainConfig&>(c))));
             }};
}

#define SA_KEY(T, type, name, field) scalar<T>(name, type, [](TrainConfig& c) -> auto& { return c.field; })

// The keys of an options struct that lists its settings as visit(config key, field, ...), the
// struct reached from a config by `member`. Settings without a config key (nullptr) are skipped.
template <typename Member>
std::vector<Key> keys_of(Member member) {
  std::vector<Key> keys;
  TrainConfig probe;
  member(probe).visit([&](const char* name, auto& field, auto&&...) {
    if (!name) return;
    using F = std::decay_t<decltype(field)>;
    auto get = [key = std::string(name), member](TrainConfig& c) -> F& {
      F* p = nullptr;
      member(c).visit([&](const char* n, auto& f, auto&&...) {
        if constexpr (std::is_same_v<std::decay_t<decltype(f)>, F>)
          if (n && key == n) p = &f;
      });
      return *p;
    };
    if constexpr (std::is_enum_v<F>)
      keys.push_back(enumerated<F>(name, get));
    else if constexpr (std::is_same_v<F, bool>)
      keys.push_back(scalar<bool>(name, "true or false", get));
    else if constexpr (std::is_same_v<F, double>)
      keys.push_back(scalar<double>(name, "a number", get));
    else if constexpr (std::is_same_v<F, std::string>)
      keys.push_back(scalar<std::string>(name, "a string", get));
    else
      keys.push_back(scalar<int64_t>(name, "an integer", get));
  });
  return keys;
}

const std::vector<Key>& schema() {
  static const std::vector<Key> k = [] {
    std::vector<Key> v = {
        SA_KEY(std::string, "a string", "model", model_type),
        SA_KEY(int64_t, "an integer", "max_seq_length", max_seq_length),
        SA_KEY(double, "a number", "mask_prob", mask_prob),
        SA_KEY(int64_t, "an integer", "max_predictions", max_predictions),
        SA_KEY(int64_t, "an integer", "warmup_steps", warmup_steps),
        SA_KEY(double, "a number", "weight_decay", weight_decay),
        SA_KEY(double, "a number", "adam_eps", adam_eps),
        SA_KEY(bool, "true or false", "bias_correction", bias_correction),
        SA_KEY(bool, "true or false", "word_pieces", word_pieces),
        SA_KEY(int64_t, "an integer", "batch_size", batch_size),
        SA_KEY(int64_t, "an integer", "unroll_steps", unroll_steps),
        SA_KEY(int64_t, "an integer", "n_negative_samples_batch", n_negative_samples_batch),
        SA_KEY(double, "a number", "dropout", dropout),
        SA_KEY(double, "a number", "all_clip_norm_val", all_clip_norm_val),
        SA_KEY(double, "a number", "learning_rate", learning_rate),
        SA_KEY(double, "a number", "state_reset", state_reset),
        SA_KEY(int64_t, "an integer", "char_tokens_bucket", char_tokens_bucket),
        SA_KEY(int64_t, "an integer", "n_epochs", n_epochs),
        SA_KEY(int64_t, "an integer", "n_train_tokens", n_train_tokens),
        SA_KEY(std::string, "a string", "train_prefix", train_prefix),
        SA_KEY(std::string, "a string", "heldout_prefix", heldout_prefix),
        SA_KEY(std::string, "a string", "train_prefix_l2", train_prefix_l2),
        SA_KEY(double, "a number", "l1_sample_ratio", l1_sample_ratio),
        SA_KEY(std::string, "a string", "dictionary", dictionary),
        SA_KEY(std::string, "a string", "dictionary_format", dictionary_format),
        SA_KEY(bool, "true or false", "dictionary_both_ways", dictionary_both_ways),
        SA_KEY(bool, "true or false", "dictionary_by_language", dictionary_by_language),
        SA_KEY(int64_t, "an integer", "dictionary_per_word", dictionary_per_word),
        SA_KEY(std::string, "a string", "vocab_file", vocab_file),
        SA_KEY(int64_t, "an integer", "vocab_min_count", vocab_min_count),
        SA_KEY(int64_t, "an integer", "vocab_max_size", vocab_max_size),
        SA_KEY(bool, "true or false", "lowercase", lowercase),
        SA_KEY(std::string, "a string", "run_dir", run_dir),
        SA_KEY(std::string, "a string", "device", device),
        SA_KEY(std::string, "a string", "precision", precision),
        SA_KEY(std::string, "a string", "sense_tables", sense_tables),
        SA_KEY(int64_t, "an integer", "seed", seed),
        SA_KEY(int64_t, "an integer", "n_steps", n_steps),
        SA_KEY(int64_t, "an integer", "log_every", log_every),
        SA_KEY(int64_t, "an integer", "checkpoint_every", checkpoint_every),
        SA_KEY(int64_t, "an integer", "keep_checkpoints", keep_checkpoints),
        SA_KEY(int64_t, "an integer", "heldout_every", heldout_every),
        SA_KEY(int64_t, "an integer", "heldout_batches", heldout_batches),
        SA_KEY(std::string, "a string", "lstm.cudnn", model.cudnn),
    };
    // The option structs' settings come from their own lists (visit), in their order: BERT's,
    // SaELMo's, then ELMo's before its ours-only lstm.cudnn.
    auto at = [&](const char* name) {
      return std::find_if(v.begin(), v.end(), [&](const Key& k) { return k.name == name; });
    };
    const std::vector<Key> bert = keys_of([](TrainConfig& c) -> BertConfig& { return c.bert; });
    v.insert(at("max_seq_length"), bert.begin(), bert.end());
    const std::vector<Key> sense = keys_of([](TrainConfig& c) -> SenseOptions& { return c.sense; });
    v.insert(at("lstm.cudnn"), sense.begin(), sense.end());
    const std::vector<Key> elmo = keys_of([](TrainConfig& c) -> ElmoOptions& { return c.model; });
    v.insert(at("lstm.cudnn"), elmo.begin(), elmo.end());
    v.push_back(Key{"char_cnn.filters", "a list of [width, count] pairs",
                    [](TrainConfig& c, const toml::node& n) {
                      const toml::array* a = n.as_array();
                      if (!a || a->empty()) throw std::invalid_argument("expected a list of [width, count] pairs");
                      c.model.filters.clear();
                      for (const toml::node& e : *a) {
                        const toml::array* p = e.as_array();
                        auto w = p && p->size() == 2 ? (*p)[0].value_exact<int64_t>() : std::nullopt;
                        auto k = p && p->size() == 2 ? (*p)[1].value_exact<int64_t>() : std::nullopt;
                        if (!w || !k || *w < 1 || *k < 1)
                          throw std::invalid_argument("expected a list of [width, count] pairs of positive integers");
                        c.model.filters.emplace_back(static_cast<int>(*w), static_cast<int>(*k));
                      }
                    },
                    [](const TrainConfig& c, toml::table& t) {
                      toml::array a;
                      for (auto [w, k] : c.model.filters) a.push_back(toml::array{w, k});
                      t.insert_or_assign("char_cnn.filters", a);
                    }});
    return v;
  }();
  return k;
}

const Key* find_key(const std::string& name) {
  for (const Key& k : schema())
    if (k.name == name) return &k;
  return nullptr;
}

// Edits (insert, delete, substitute, swap two neighbours) between a and b.
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1])});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

// "did you mean n_steps?": the valid keys nearest to a misspelt one (a few edits, or the same
// last part under another table, e.g. dim -> lstm.dim), else where the list is.
std::string key_hint(const std::string& name) {
  const auto last = [](const std::string& k) { return k.substr(k.rfind('.') + 1); };
  const size_t most = std::max<size_t>(2, name.size() / 3);
  std::vector<std::pair<size_t, std::string>> near;
  for (const Key& k : schema()) {
    size_t d = std::min(edit_distance(name, k.name), edit_distance(last(name), last(k.name)) + 1);
    if (d <= most) near.emplace_back(d, k.name);
  }
  std::sort(near.begin(), near.end());
  if (near.size() > 3) near.resize(3);
  if (near.empty()) return fmt::format("none of the {} valid keys is close (docs/design.md §9 lists them)", schema().size());
  std::string s = "did you mean ";
  for (size_t i = 0; i < near.size(); ++i) s += (i == 0 ? "" : i + 1 == near.size() ? " or " : ", ") + near[i].second;
  return s + "?";
}

// Applies every leaf of `t` (dotted names for nested tables).
void apply(TrainConfig& c, const toml::table& t, const std::string& prefix, const std::string& origin,
           std::map<std::string, std::string>& lines) {
  for (auto&& [k, node] : t) {
    std::string name = prefix + std::string(k.str());
    if (node.is_table() && !find_key(name)) {
      apply(c, *node.as_table(), name + ".", origin, lines);
      continue;
    }
    const Key* key = find_key(name);
    int line = static_cast<int>(node.source().begin.line);
    lines[name] = fmt::format("{}:{}", origin, line);
    SA_CHECK(key, "{}:{}: unknown key '{}'; {}", origin, line, name, key_hint(name));
    try {
      key->set(c, node);
    } catch (const std::invalid_argument& e) {
      fail("{}:{}: key '{}': {}", origin, line, name, e.what());
    }
  }
}

// A value as a person would write it (numbers in their shortest form).
std::string value_text(const toml::node& n) {
  if (auto d = n.value_exact<double>()) return fmt::format("{}", *d);
  std::ostringstream s;
  n.visit([&](auto&& x) { s << x; });
  return s.str();
}

bool matches_a_file(const std::string& pattern) {
  try {
    return !expand_glob(pattern).empty();
  } catch (const Error&) {
    return false;
  }
}

// Where each key was set: "file:line", "--set" for overrides, or the file for defaults.
using KeyLines = std::map<std::string, std::string>;

void validate(const TrainConfig& c, const std::string& origin, const KeyLines& lines, bool check_files) {
  auto at = [&](const std::string& key) {
    auto it = lines.find(key);
    return it == lines.end() ? origin + " (default of " + key + ")" : it->second;
  };
  const ConfigCheck checks(at);
  auto check = [&](bool ok, const std::string& key, const std::string& what) { checks.check(ok, key, what); };
  auto positive = [&](const char* key, double v) { checks.positive(key, v); };
  auto non_negative = [&](const char* key, double v) { checks.non_negative(key, v); };
  positive("batch_size", c.batch_size);
  positive("unroll_steps", c.unroll_steps);
  positive("n_negative_samples_batch", c.n_negative_samples_batch);
  positive("log_every", c.log_every);
  positive("checkpoint_every", c.checkpoint_every);
  positive("keep_checkpoints", c.keep_checkpoints);
  positive("learning_rate", c.learning_rate);
  positive("all_clip_norm_val", c.all_clip_norm_val);
  positive("heldout_batches", c.heldout_batches);
  non_negative("char_tokens_bucket", static_cast<double>(c.char_tokens_bucket));
  non_negative("heldout_every", c.heldout_every);
  non_negative("n_steps", static_cast<double>(c.n_steps));
  non_negative("n_train_tokens", static_cast<double>(c.n_train_tokens));
  non_negative("vocab_min_count", c.vocab_min_count);
  non_negative("vocab_max_size", c.vocab_max_size);
  check(c.n_steps > 0 || c.n_epochs > 0, "n_epochs", fmt::format("must be positive when n_steps is 0 (got {})", c.n_epochs));
  non_negative("n_epochs", c.n_epochs);
  check(c.dropout >= 0 && c.dropout < 1, "dropout", fmt::format("must be in [0, 1) (got {})", c.dropout));
  check(c.state_reset >= 0 && c.state_reset <= 1, "state_reset", fmt::format("must be in [0, 1] (got {})", c.state_reset));
  check(!c.train_prefix.empty(), "train_prefix", "(the training corpus: a file or a glob) is required");
  check(!check_files || c.train_prefix.empty() || matches_a_file(c.train_prefix), "train_prefix",
        fmt::format("'{}' matches no file", c.train_prefix));
  check(!check_files || c.train_prefix_l2.empty() || matches_a_file(c.train_prefix_l2), "train_prefix_l2",
        fmt::format("'{}' matches no file", c.train_prefix_l2));
  check(!check_files || c.heldout_prefix.empty() || matches_a_file(c.heldout_prefix), "heldout_prefix",
        fmt::format("'{}' matches no file", c.heldout_prefix));
  check(!c.run_dir.empty(), "run_dir", "is required");
  const ModelFamilyInfo* family = find_model_family(c.model_type);
  check(family, "model", fmt::format("must be {}, got \"{}\"", model_family_names(), c.model_type));
  if (family->validate) family->validate(c, checks);
  check(c.sense.n_context == 0 || c.sense.n_context >= 2, "n_context",
        fmt::format("must be 0 (plain ELMo) or at least 2 (sense 0 is the warm-up sense), got {}", c.sense.n_context));
  check(c.precision == "f32" || c.precision == "tf32" || c.precision == "bf16" || c.precision == "f64", "precision",
        fmt::format("must be \"f32\", \"tf32\", \"bf16\" or \"f64\", got \"{}\"", c.precision));
  check(c.sense_tables == "replicated" || c.sense_tables == "sharded", "sense_tables",
        fmt::format("must be \"replicated\" or \"sharded\", got \"{}\"", c.sense_tables));
  if (c.sense_tables == "sharded") {
    check(c.sense.n_context >= 2, "sense_tables", "\"sharded\" is for SaELMo's sense tables");
    check(c.sense.negatives != SenseOptions::Negatives::Full, "sense_tables",
          "\"sharded\" needs sampled negatives (sense_negatives = \"full\" reads every row each step)");
    check(c.sense.center_update != SenseOptions::CenterUpdate::Released, "sense_tables",
          "\"sharded\" needs center_update = \"paper\" or \"per_token\" (\"released\" decays every center each step)");
  }
  check(!(c.sense.softmax_tables == SenseOptions::TableLayout::Shared && c.sense_tables == "sharded"), "softmax_tables",
        "\"shared\" needs sense_tables = \"replicated\" (a sharded step gathers each direction's rows apart)");
  check(c.dictionary_format == "muse" || c.dictionary_format == "cedict" || c.dictionary_format == "edict" ||
            c.dictionary_format == "ding",
        "dictionary_format", fmt::format("must be \"muse\", \"cedict\", \"edict\" or \"ding\", got \"{}\"", c.dictionary_format));
  check(c.dictionary.empty() || c.sense.n_context >= 2, "dictionary",
        "needs the sense-aware softmax (n_context >= 2): the translation loss is between senses");
  check(c.dictionary.empty() || c.sense.negatives != SenseOptions::Negatives::Full, "dictionary",
        "works with sense_negatives = \"uniform\" (the released setting) or \"log_uniform\"");
  check(!c.train_prefix_l2.empty() || c.dictionary.empty(), "dictionary", "needs train_prefix_l2 (the second language)");
  check(c.l1_sample_ratio > 0 && c.l1_sample_ratio < 1, "l1_sample_ratio",
        fmt::format("must be in (0, 1), got {}", c.l1_sample_ratio));
  positive("dictionary_per_word", c.dictionary_per_word);
  if (c.sense.n_context >= 2) {
    positive("cluster_proj_dim", c.sense.cluster_proj_dim);
    positive("pca_sample", c.sense.pca_sample);
    positive("pca_every", c.sense.pca_every);
    non_negative("pca_push_every", c.sense.pca_push_every);
    non_negative("pca_queue_steps", static_cast<double>(c.sense.pca_queue_steps));
    positive("context_record_window", c.sense.context_record_window);
    positive("prune_every", c.sense.prune_every);
    non_negative("prune_first", static_cast<double>(c.sense.prune_first));
    non_negative("sense_negative_rows_max", static_cast<double>(c.sense.negative_rows_max));
    non_negative("split_min_count", static_cast<double>(c.sense.split_min_count));
    positive("contextual_warmup", static_cast<double>(c.sense.contextual_warmup));
    check(c.sense.sense_learning_rate > 0 && c.sense.sense_learning_rate <= 1, "sense_learning_rate",
          fmt::format("must be in (0, 1] (the share of the way a center moves toward its contexts), got {}",
                      c.sense.sense_learning_rate));
    check(c.sense.remove_less_freqent_contexts >= 0 && c.sense.remove_less_freqent_contexts <= 1,
          "remove_less_freqent_contexts",
          fmt::format("must be in [0, 1] (a share of the selection window), got {}", c.sense.remove_less_freqent_contexts));
    check(c.sense.cluster_proj_dim <= c.model.projection_dim, "cluster_proj_dim",
          fmt::format("({}) exceeds lstm.projection_dim ({})", c.sense.cluster_proj_dim, c.model.projection_dim));
  }
}

}  // namespace

std::vector<std::string> TrainConfig::keys() {
  std::vector<std::string> v;
  for (const Key& k : schema()) v.push_back(k.name);
  return v;
}

const std::vector<std::string>& TrainConfig::resumable_keys() {
  static const std::vector<std::string> k = {"n_steps",       "n_epochs",       "log_every",       "checkpoint_every",
                                             "keep_checkpoints", "heldout_every", "heldout_batches", "heldout_prefix",
                                             "device",        "run_dir",        "lstm.cudnn",     "precision",
                                             "sense_tables"};
  return k;
}

std::vector<std::string> TrainConfig::refused_changes(const TrainConfig& saved) const {
  TrainConfig now = *this;
  if (now.n_train_tokens == 0) now.n_train_tokens = saved.n_train_tokens;
  std::vector<std::string> refused;
  if (now.model.effective_proj_clip() != saved.model.effective_proj_clip())
    refused.push_back(fmt::format("the model's proj_clip: {} -> {} (lstm.proj_clip, lstm.cudnn)",
                                  saved.model.effective_proj_clip(), now.model.effective_proj_clip()));
  if (now.model.effective_cell_clip() != saved.model.effective_cell_clip())
    refused.push_back(fmt::format("the model's cell_clip: {} -> {} (lstm.cell_clip, lstm.cudnn)",
                                  saved.model.effective_cell_clip(), now.model.effective_cell_clip()));
  const auto& ok = resumable_keys();
  for (const Key& k : schema()) {
    if (std::find(ok.begin(), ok.end(), k.name) != ok.end()) continue;
    toml::table a, b;
    k.put(saved, a);
    k.put(now, b);
    const std::string was = value_text(*a.get(k.name)), is = value_text(*b.get(k.name));
    if (was != is) refused.push_back(fmt::format("{}: {} -> {}", k.name, was, is));
  }
  return refused;
}

// A shipped config's data path that this machine lacks (../shared/data is only on the developers'
// machines) gives way to the default corpus, saying so; a path given with --set, a bilingual run
// and a path outside configs/ stay errors. The default corpus is extracted when it is missing.
static void use_default_corpus_where_missing(TrainConfig& c, const std::string& path, const KeyLines& lines) {
  namespace fs = std::filesystem;
  const DefaultCorpus d = default_corpus();
  auto from_file = [&](const std::string& key) {
    auto it = lines.find(key);
    return it != lines.end() && it->second.rfind("--set", 0) != 0;
  };
  const bool shipped = fs::path(path).parent_path().filename() == "configs";
  if (shipped && c.train_prefix_l2.empty() && from_file("train_prefix") && !matches_a_file(c.train_prefix) &&
      !is_default_corpus(d, c.train_prefix)) {
    std::printf("train: train_prefix '%s' (%s) matches no file on this machine: training on the default corpus, %s "
                "(Debian's debian-handbook, English); --set train_prefix=PATH_OR_GLOB trains on your own text\n",
                c.train_prefix.c_str(), lines.at("train_prefix").c_str(), d.train.c_str());
    c.train_prefix = d.train;
    if (from_file("heldout_prefix") && !matches_a_file(c.heldout_prefix)) c.heldout_prefix = d.heldout;
  }
  if (is_default_corpus(d, c.train_prefix) || (!c.heldout_prefix.empty() && is_default_corpus(d, c.heldout_prefix)))
    prepare_default_corpus(d);
}

std::string TrainConfig::find(const std::string& name) {
  namespace fs = std::filesystem;
  if (fs::is_regular_file(name)) return name;
  std::vector<std::string> tried = {name};
  if (fs::path(name).is_relative()) {
    std::vector<fs::path> places = {fs::path("configs") / name};
    std::error_code ec;
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    if (!ec) places.push_back((exe.parent_path().parent_path() / "configs" / name).lexically_normal());
    for (const fs::path& p : places) {
      if (fs::is_regular_file(p)) return p.string();
      tried.push_back(p.string());
    }
  }
  std::string list;
  for (const std::string& t : tried) list += (list.empty() ? "" : ", ") + t;
  fail("{}: no such config file (looked for {})", name, list);
}

TrainConfig TrainConfig::load(const std::string& path, const std::vector<std::string>& overrides, bool check_files) {
  TrainConfig c;
  toml::table t;
  check_file_size(path, kMaxSettingsBytes, "config file");
  try {
    t = toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    fail("{}:{}: {}", path, e.source().begin.line, e.description());
  }
  KeyLines lines;
  apply(c, t, "", path, lines);
  for (const std::string& o : overrides) {
    size_t eq = o.find('=');
    SA_CHECK(eq != std::string::npos && eq > 0, "--set {}: expected key=value", o);
    std::string name = o.substr(0, eq), value = o.substr(eq + 1);
    const Key* key = find_key(name);
    SA_CHECK(key, "--set {}: unknown key '{}'; {}", o, name, key_hint(name));
    toml::table one;
    try {
      one = toml::parse("v = " + value);
    } catch (const toml::parse_error&) {
      one = toml::table{{"v", value}};  // a bare string
    }
    try {
      key->set(c, *one.get("v"));
      lines[name] = "--set " + o;
    } catch (const std::invalid_argument& e) {
      fail("--set {}: {}", o, e.what());
    }
  }
  if (check_files) use_default_corpus_where_missing(c, path, lines);
  validate(c, path, lines, check_files);
  return c;
}

std::string TrainConfig::to_toml() const {
  toml::table flat;
  for (const Key& k : schema()) k.put(*this, flat);
  std::ostringstream s;
  s << "# resolved configuration (every key, defaults included)\n";
  for (auto&& [k, v] : flat) {
    s << k.str() << " = ";  // a dotted key: valid TOML, read back into the same table
    v.visit([&](auto&& x) { s << x; });
    s << "\n";
  }
  return s.str();
}

nlohmann::json TrainConfig::bilm_options(int n_tokens_vocab) const {
  nlohmann::json j = model.to_json();
  j["bidirectional"] = true;
  j["dropout"] = dropout;
  j["all_clip_norm_val"] = all_clip_norm_val;
  j["n_epochs"] = n_epochs;
  j["n_train_tokens"] = n_train_tokens;
  j["batch_size"] = batch_size;
  j["n_tokens_vocab"] = n_tokens_vocab;
  j["unroll_steps"] = unroll_steps;
  j["n_negative_samples_batch"] = n_negative_samples_batch;
  j["learning_rate"] = learning_rate;
  if (sense.n_context >= 2) {  // the released SaELMo's additions
    j["n_context"] = sense.n_context;
    j["cluster_proj_dim"] = sense.cluster_proj_dim;
    j["pca_sample"] = sense.pca_sample;
    j["context_record_window"] = sense.context_record_window;
    j["remove_less_freqent_contexts"] = sense.remove_less_freqent_contexts;
    j["sense_learning_rate"] = sense.sense_learning_rate;
  }
  // Ours, for the tools that read the run: how its text was read and, for SaELMo, every sense
  // setting (bilm-tf and AllenNLP ignore unknown keys).
  nlohmann::json ours = {{"lowercase", lowercase}, {"train_prefix", train_prefix}, {"train_prefix_l2", train_prefix_l2}};
  if (sense.n_context >= 2) ours["sense"] = sense.to_json();
  j["sensealign"] = ours;
  return j;
}

}  // namespace sa
