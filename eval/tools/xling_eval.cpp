// bin/xling_eval: zero-shot cross-lingual transfer with a frozen encoder. Classifiers train on
// English, are chosen on English dev data and are tested on other languages with no training data
// of theirs. This version has the sentiment task:
//   bin/xling_eval sent --model RUN_DIR --train marc-train-en.csv --test en=marc-test-en.csv
//       --test es=marc-test-es.csv [--align W.layer{layer}.txt] [--runs 5] [--out report.json]
#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>

#include "data/atomic_file.h"
#include "data/file_hash.h"
#include "eval/aligned_encoder.h"
#include "eval/sentiment_task.h"
#include "layers/dense_classifier.h"
#include "layers/load_encoder.h"
#include "train/fit_classifier.h"

using namespace sa;

namespace {

struct SentArgs {
  EncoderSource model;
  std::string align, device = "auto", train, dev, layers = "concat", cache = "xling-cache", out;
  std::vector<std::string> tests;
  double dev_fraction = 0.1, dropout = 0.5, lr = 1e-3;
  int runs = 5, max_tokens = 256, hidden = 256, batch_size = 32, max_epochs = 50, patience = 5;
  uint64_t seed = 1;
};

ReviewSet read_reviews(const std::string& path) {
  return std::filesystem::path(path).extension() == ".review" ? read_webis_cls(path) : read_marc_csv(path);
}

// Mean and sample standard deviation (0 for one run).
std::pair<double, double> mean_std(const std::vector<double>& v) {
  const double m = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  double ss = 0;
  for (double x : v) ss += (x - m) * (x - m);
  return {m, v.size() > 1 ? std::sqrt(ss / static_cast<double>(v.size() - 1)) : 0.0};
}

// What the cached features depend on: the model's files, the maps, the data file, the settings.
uint64_t feature_key(const SentArgs& a, int n_layers, const std::string& data_file, bool lowercase) {
  uint64_t h = hash_string(kFnvOffset, "xling sent review means v1");
  const std::string options = a.model.run_dir.empty() ? a.model.options : a.model.run_dir + "/options.json";
  const std::string weights = a.model.run_dir.empty() ? a.model.weights : a.model.run_dir + "/weights.hdf5";
  for (const std::string& f : {options, weights}) {
    const uint64_t fh = hash_file(f);
    h = hash_bytes(h, &fh, sizeof fh);
  }
  for (int l = 0; l < n_layers && !a.align.empty(); ++l) {
    std::string path = a.align;
    if (size_t at = path.find("{layer}"); at != std::string::npos) path.replace(at, 7, std::to_string(l));
    const uint64_t fh = hash_file(path);
    h = hash_bytes(h, &fh, sizeof fh);
  }
  const uint64_t dh = hash_file(data_file);
  h = hash_bytes(h, &dh, sizeof dh);
  return hash_string(h, a.layers + "|" + std::to_string(a.max_tokens) + "|" + (lowercase ? "lc" : "cased"));
}

int run_sent(const SentArgs& a) {
  const Device dev = resolve_device(a.device);
  std::unique_ptr<ContextualEncoder> enc = load_encoder(a.model, dev);
  if (!a.align.empty()) {
    std::vector<Tensor> maps = read_layer_maps(a.align, enc->n_layers(), enc->dim(), dev);
    enc = std::make_unique<AlignedEncoder>(std::move(enc), std::move(maps));
  }
  const LayerSpec spec = parse_layer_spec(a.layers, enc->n_layers());
  std::vector<std::pair<std::string, std::string>> tests;  // language, file
  for (const std::string& t : a.tests) {
    const size_t eq = t.find('=');
    SA_CHECK(eq != std::string::npos && eq > 0 && eq + 1 < t.size(), "--test {}: expected LANG=FILE", t);
    tests.emplace_back(t.substr(0, eq), t.substr(eq + 1));
  }
  // Data: the English training file, its dev part, and each test file.
  auto load = [&](const std::string& file) {
    SentimentData d = prepare_sentiment(read_reviews(file), a.max_tokens, enc->lowercase);
    SA_CHECK(!d.labels.empty(), "{}: no review with 1, 2, 4 or 5 stars", file);
    std::fprintf(stderr, "%s: %zu reviews (%d with 3 stars and %d without text left out, %d cut at %d tokens)\n",
                 file.c_str(), d.labels.size(), d.neutral, d.empty, d.truncated, a.max_tokens);
    return d;
  };
  auto features = [&](const std::string& file, const SentimentData& d) {
    return cached_tensor(a.cache, feature_key(a, enc->n_layers(), file, enc->lowercase), file, dev,
                         [&] { return review_means(*enc, d, spec, "embed " + file); });
  };
  SentimentData train = load(a.train);
  Tensor train_x = features(a.train, train);
  SentimentData dev_data;
  Tensor dev_x;
  if (!a.dev.empty()) {
    dev_data = load(a.dev);
    dev_x = features(a.dev, dev_data);
  } else {  // a fixed part of the training file, the same for every run
    SA_CHECK(a.dev_fraction > 0 && a.dev_fraction < 1, "--dev-fraction must be in (0, 1), got {}", a.dev_fraction);
    std::vector<size_t> order(train.labels.size());
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), std::mt19937_64(a.seed * 104729 + 7));
    const size_t n_dev = std::max<size_t>(1, static_cast<size_t>(a.dev_fraction * static_cast<double>(order.size())));
    SA_CHECK(n_dev < order.size(), "{}: too few reviews to hold out a dev part", a.train);
    std::vector<size_t> dev_rows(order.begin(), order.begin() + static_cast<long>(n_dev)),
        train_rows(order.begin() + static_cast<long>(n_dev), order.end());
    std::sort(dev_rows.begin(), dev_rows.end());
    std::sort(train_rows.begin(), train_rows.end());
    auto rows_of = [&](const Tensor& x, const std::vector<size_t>& rows) {
      std::vector<int32_t> r(rows.begin(), rows.end());
      return ops::gather_rows(x, Tensor::from(r, {static_cast<int64_t>(r.size())}, dev));
    };
    dev_data = subset(train, dev_rows);
    dev_x = rows_of(train_x, dev_rows);
    train_x = rows_of(train_x, train_rows);
    train = subset(train, train_rows);
  }
  std::vector<std::pair<SentimentData, Tensor>> test_sets;
  for (const auto& [lang, file] : tests) {
    SentimentData d = load(file);
    Tensor x = features(file, d);
    test_sets.emplace_back(std::move(d), x);
  }

  std::vector<double> dev_acc;
  std::map<std::string, std::vector<double>> acc;
  nlohmann::json runs = nlohmann::json::array();
  for (int run = 0; run < a.runs; ++run) {
    const uint64_t seed = a.seed + static_cast<uint64_t>(run);
    DenseClassifier clf = DenseClassifier::init(train_x.dim(1), a.hidden, 2, a.dropout, seed, dev);
    FitOptions fo;
    fo.batch_size = a.batch_size, fo.max_epochs = a.max_epochs, fo.patience = a.patience, fo.lr = a.lr, fo.seed = seed;
    fo.label = "sent run " + std::to_string(run + 1) + "/" + std::to_string(a.runs);
    Generator eval_gen(0);
    FitResult fr = fit_classifier(
        clf.params(), train_x.dim(0),
        [&](const std::vector<int64_t>& rows, Generator& gen) {
          std::vector<int32_t> r(rows.begin(), rows.end()), y;
          for (int64_t i : rows) y.push_back(train.labels[static_cast<size_t>(i)]);
          const int64_t n = static_cast<int64_t>(r.size());
          return ops::mean(ops::cross_entropy(clf.logits(ops::gather_rows(train_x, Tensor::from(r, {n}, dev)), true, gen),
                                              Tensor::from(y, {n}, dev)));
        },
        [&] { return accuracy(clf.logits(dev_x, false, eval_gen), dev_data.labels); }, fo);
    nlohmann::json r = {{"seed", seed}, {"epochs", fr.epochs}, {"best_epoch", fr.best_epoch}, {"dev_en", fr.best_dev}};
    dev_acc.push_back(fr.best_dev);
    NoGrad ng;
    for (size_t t = 0; t < tests.size(); ++t) {
      const double v = accuracy(clf.logits(test_sets[t].second, false, eval_gen), test_sets[t].first.labels);
      acc[tests[t].first].push_back(v);
      r["test"][tests[t].first] = v;
    }
    runs.push_back(r);
  }
  // The table, and the report.
  nlohmann::json report = {{"task", "sent"},
                           {"model", enc->origin},
                           {"align", a.align},
                           {"layers", spec.name()},
                           {"settings",
                            {{"hidden", a.hidden}, {"dropout", a.dropout}, {"lr", a.lr}, {"batch_size", a.batch_size},
                             {"max_epochs", a.max_epochs}, {"patience", a.patience}, {"max_tokens", a.max_tokens},
                             {"train_reviews", train.labels.size()}, {"dev_reviews", dev_data.labels.size()}}},
                           {"runs", runs}};
  std::printf("sent: accuracy over %d runs, mean ± sample std (%s, layers %s)\n", a.runs, enc->origin.c_str(),
              spec.name().c_str());
  auto [dm, ds] = mean_std(dev_acc);
  std::printf("  %-10s %.4f ± %.4f\n", "en (dev)", dm, ds);
  report["dev_en"] = {{"mean", dm}, {"std", ds}};
  for (size_t t = 0; t < tests.size(); ++t) {
    const auto& [lang, file] = tests[t];
    auto [m, s] = mean_std(acc[lang]);
    const size_t n = test_sets[t].first.labels.size();
    std::printf("  %-10s %.4f ± %.4f   %s (%zu reviews)\n", lang.c_str(), m, s, file.c_str(), n);
    report["test"][lang] = {{"mean", m}, {"std", s}, {"file", file}, {"reviews", n}};
  }
  if (!a.out.empty()) write_file_atomically(a.out, report.dump(2) + "\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Zero-shot cross-lingual transfer with a frozen encoder: train on English, test on other languages"};
  app.require_subcommand(1);
  SentArgs s;
  CLI::App* sent = app.add_subcommand(
      "sent", "review sentiment (MARC CSV or Webis-CLS-10 .review): the mean of a review's vectors -> dense "
              "(hidden, ReLU, dropout) -> dense to 2 classes; Adam, best English-dev epoch; 3-star reviews left out");
  sent->option_defaults()->always_capture_default();
  sent->add_option("--model", s.model.run_dir, "a run directory (options.json + weights.hdf5)");
  sent->add_option("--options", s.model.options, "bilm-tf options.json");
  sent->add_option("--weights", s.model.weights, "bilm-tf weights.hdf5");
  sent->add_option("--align", s.align, "a map from `bin/align fit` for every layer (+Proj); \"{layer}\": one per layer");
  sent->add_option("--train", s.train, "English training reviews")->required();
  sent->add_option("--dev", s.dev, "English dev reviews (default: --dev-fraction of --train)");
  sent->add_option("--dev-fraction", s.dev_fraction, "part of --train held out as dev when --dev is not given");
  sent->add_option("--test", s.tests, "LANG=FILE, repeatable: reviews to test on")->required();
  sent->add_option("--layers", s.layers, "concat, average, top or a layer index (0: the token layer)");
  sent->add_option("--runs", s.runs, "classifiers trained with seeds seed, seed+1, ...")
      ->check(CLI::Validator(positive_integer, "POSITIVE"));
  sent->add_option("--seed", s.seed, "first seed");
  sent->add_option("--max-tokens", s.max_tokens, "tokens kept per review (its first sentences)")
      ->check(CLI::Validator(positive_integer, "POSITIVE"));
  sent->add_option("--hidden", s.hidden, "units of the hidden dense layer");
  sent->add_option("--dropout", s.dropout, "dropout after the hidden layer");
  sent->add_option("--lr", s.lr, "Adam learning rate");
  sent->add_option("--batch-size", s.batch_size, "reviews per batch")->check(CLI::Validator(positive_integer, "POSITIVE"));
  sent->add_option("--max-epochs", s.max_epochs, "epochs at most");
  sent->add_option("--patience", s.patience, "epochs without a better dev accuracy before stopping");
  sent->add_option("--cache", s.cache, "directory of cached review vectors (keyed by model, maps, file, settings); "
                                       "empty: no cache");
  sent->add_option("--out", s.out, "JSON report: settings, each run's numbers, mean and std per language");
  sent->add_option("--device", s.device, "auto, cpu, cuda or cuda:N");
  CLI11_PARSE(app, argc, argv);
  try {
    if (sent->parsed()) return run_sent(s);
  } catch (const std::exception& e) {
    return tool_failure("xling_eval", e);
  }
  return 0;
}
