// The harness every bin/xling_eval task shares: the arguments, the encoder of each language (a
// model or precomputed vectors, an optional per-language model and map), the feature cache keys,
// the CJK lexicon, the runs over seeds (several at once on the CPU), the fit options, and the
// table and JSON report of mean and sample std per language. A task (eval/xling_tasks.cpp lists
// them) reads its data, builds its features and classifier, and hands one run to run_and_report.
#pragma once
#include <CLI/CLI.hpp>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "data/file_hash.h"
#include "data/tokenizer.h"
#include "eval/encoder_options.h"
#include "eval/fit_classifier.h"
#include "eval/xling_features.h"
#include "layers/encoder.h"

namespace sa {

// The options of every task (each sets its own defaults) and those of one task.
struct XlingArgs {
  EncoderOptions model;
  std::string device = "auto", train, dev, layers = "concat", cache = "xling-cache", out;
  std::vector<std::string> tests, embeddings, align, test_models;
  double dropout = 0.5, lr = 1e-3, clip = 5.0;
  int runs = 5, hidden = 256, batch_size = 32, max_epochs = 50, patience = 5;
  int jobs = 0;  // runs trained at once on the CPU; 0: as many as there are threads, at most --runs
  uint64_t seed = 1;
  // sent
  double dev_fraction = 0.1;
  int max_tokens = 256;
  // sent and xnli: Chinese and Japanese segmented as the bilingual corpora were
  std::string cedict, edict, muse, muse_skip = "4000:5000";
  int cjk_max_len = 8;
  // xnli
  int dense = 300;
  // ner
  std::string predictions;
  double min_lr = 1e-4, word_dropout = 0.05;
};

// The encoder of each language and a fingerprint of what it computes. English (the training and
// dev files) reads --model (or --embeddings). A test language reads its --test-model when given
// (ELMo+Proj: one monolingual model per language), else --model; its --align map, fitted from
// that language into English, then maps its vectors into English's space. English is never mapped.
struct Encoders {
  std::shared_ptr<const ContextualEncoder> english;
  std::map<std::string, std::shared_ptr<const ContextualEncoder>> test;
  std::map<std::string, uint64_t> fingerprint;  // "" for English
  nlohmann::json describe;                        // for the report

  const ContextualEncoder& of(const std::string& lang) const { return lang.empty() ? *english : *test.at(lang); }
};

// One classifier run's numbers: its fit, and its score on each test file.
struct RunScores {
  FitResult fit;
  std::vector<double> test;
};

// What a task reports beside the scores: its settings, and per test file extra report fields and
// a note after the file name in the table.
struct TaskReport {
  std::string task, metric;
  int decimals = 4;
  nlohmann::json settings;
  std::vector<nlohmann::json> test_info;
  std::vector<std::string> test_notes;
};

// What cached features depend on: the encoder's fingerprint (its files and map), the data file,
// the CJK lexicon and the settings that shape the features. The lexicon files and settings are
// hashed once per command, each data file once.
class FeatureKeys {
 public:
  explicit FeatureKeys(const XlingArgs& a) {
    settings_ = hash_string(kFnvOffset, a.layers + "|" + std::to_string(a.max_tokens) + "|" + a.muse_skip + "|" +
                                            std::to_string(a.cjk_max_len));
    for (const std::string& f : {a.cedict, a.edict, a.muse}) {
      const uint64_t fh = f.empty() ? 0 : hash_file(f);
      settings_ = hash_bytes(settings_, &fh, sizeof fh);
    }
  }
  uint64_t operator()(uint64_t encoder, const std::string& data_file, bool lowercase, const std::string& what) {
    auto it = files_.find(data_file);
    if (it == files_.end()) it = files_.emplace(data_file, hash_file(data_file)).first;
    uint64_t h = hash_bytes(hash_string(settings_, what + (lowercase ? "|lc" : "|cased")), &encoder, sizeof encoder);
    return hash_bytes(h, &it->second, sizeof it->second);
  }

 private:
  uint64_t settings_ = 0;
  std::map<std::string, uint64_t> files_;
};

// What every task opens first: the device, the test files by language, the encoder of each
// language, the layers it reads and the keys of the feature cache.
struct XlingInputs {
  explicit XlingInputs(const XlingArgs& a);
  Device dev;
  std::vector<std::pair<std::string, std::string>> tests;
  Encoders encs;
  LayerSpec spec;
  FeatureKeys feature_key;
};

// A task of bin/xling_eval: its subcommand, what its files hold ("reviews"), its defaults, its own
// options and its run.
struct XlingTask {
  std::string name, description, items;
  std::string data;  // what --train/--dev/--test read and where a user gets it (--help, and the error without it)
  XlingArgs defaults;
  std::function<void(CLI::App*, XlingArgs&)> add_options;
  std::function<int(const XlingArgs&)> run;
};
// sent, ner and xnli.
std::vector<XlingTask> xling_tasks();

// The options every task takes (model, data, runs, cache, report) and the CJK segmentation ones.
void add_common_options(CLI::App* c, XlingArgs& a, const std::string& items);
void add_cjk_options(CLI::App* c, XlingArgs& a);

// Mean and sample standard deviation (0 for one run).
std::pair<double, double> mean_std(const std::vector<double>& v);
// LANG=VALUE options (--test, --align, --test-model) as (language, value); a language at most once.
std::vector<std::pair<std::string, std::string>> by_language(const std::vector<std::string>& specs, const char* option,
                                                             const char* value);
Encoders open_encoders(const XlingArgs& a, Device dev, const std::vector<std::pair<std::string, std::string>>& tests);
// Chinese or Japanese text without a lexicon: said once per file.
void warn_cjk(const std::string& file);
// The CJK lexicon of --cedict/--edict/--muse, or none.
std::unique_ptr<CjkLexicon> cjk_lexicon(const XlingArgs& a);
// The fit options every task takes from its arguments, for run `run` with `seed`.
FitOptions fit_options(const XlingArgs& a, const char* task, int run, uint64_t seed);
// Runs `one_run(run, seed)` for seeds seed..seed+runs-1 (several at once on the CPU, --jobs), then
// prints the table (mean ± sample std per language) and writes the JSON report.
int run_and_report(const XlingArgs& a, const Encoders& enc, const LayerSpec& spec,
                   const std::vector<std::pair<std::string, std::string>>& tests, TaskReport rep,
                   const std::function<RunScores(int, uint64_t)>& one_run);

}  // namespace sa
