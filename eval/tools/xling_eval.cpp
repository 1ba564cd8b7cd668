// bin/xling_eval: zero-shot cross-lingual transfer with a frozen encoder. Classifiers train on
// English, are chosen on English dev data and are tested on other languages with no training data
// of theirs. Tasks: sent (review sentiment), ner (BiLSTM-CRF) and xnli (BiLSTM pair model).
//   bin/xling_eval sent --model RUN_DIR --train marc-train-en.csv --test en=marc-test-en.csv
//       --test es=marc-test-es.csv [--align W.layer{layer}.txt] [--runs 5] [--out report.json]
//   bin/xling_eval ner --model RUN_DIR --train eng.train --dev eng.testa --test de=deu.testa
//   bin/xling_eval xnli --model RUN_DIR --train SICK.txt --dev dev-en.tsv --test de=dev-de.tsv
#include <omp.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>
#include <sstream>

#include "data/atomic_file.h"
#include "data/file_hash.h"
#include "eval/aligned_encoder.h"
#include "eval/ner_task.h"
#include "eval/nli_task.h"
#include "eval/precomputed_encoder.h"
#include "eval/sentiment_task.h"
#include "eval/tools/encoder_options.h"
#include "layers/bert_encoder.h"
#include "layers/dense_classifier.h"
#include "layers/load_encoder.h"
#include "layers/ner_tagger.h"
#include "layers/nli_classifier.h"
#include "eval/fit_classifier.h"

using namespace sa;

namespace {

// The options of every task (each sets its own defaults) and those of one task.
struct TaskArgs {
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

// LANG=VALUE options (--test, --align, --test-model) as (language, value); a language at most once.
std::vector<std::pair<std::string, std::string>> by_language(const std::vector<std::string>& specs,
                                                             const char* option, const char* value) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const std::string& t : specs) {
    const size_t eq = t.find('=');
    SA_CHECK(eq != std::string::npos && eq > 0 && eq + 1 < t.size(), "{} {}: expected LANG={}", option, t, value);
    const std::string lang = t.substr(0, eq);
    for (const auto& [l, v] : out) SA_CHECK(l != lang, "{}: language {} given twice", option, lang);
    out.emplace_back(lang, t.substr(eq + 1));
  }
  return out;
}

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

uint64_t hash_files(uint64_t h, const std::vector<std::string>& files) {
  for (const std::string& f : files) {
    const uint64_t fh = hash_file(f);
    h = hash_bytes(h, &fh, sizeof fh);
  }
  return h;
}

// A model given as a run directory, or as "options.json,weights.hdf5"; BERT pools pieces as --pieces.
EncoderSource model_source(const std::string& v, const std::string& pieces) {
  const size_t comma = v.find(',');
  if (comma == std::string::npos) return {v, "", "", pieces};
  return {"", v.substr(0, comma), v.substr(comma + 1), pieces};
}

// What a model's vectors depend on: its files' bytes, and for BERT how a word pools its pieces.
uint64_t model_fingerprint(const EncoderSource& m) {
  const uint64_t h = hash_files(kFnvOffset, encoder_files(m));
  return !m.run_dir.empty() && is_bert_dir(m.run_dir) ? hash_string(h, "pieces " + m.pieces) : h;
}

Encoders open_encoders(const TaskArgs& a, Device dev, const std::vector<std::pair<std::string, std::string>>& tests) {
  const EncoderSource& source = a.model.source;
  const bool model = !source.run_dir.empty() || !source.weights.empty();
  SA_CHECK(model != !a.embeddings.empty(), "give either a model (--model, or --options and --weights) or "
                                           "--embeddings files, not both");
  Encoders e;
  if (model) {
    a.model.check();
    e.english = load_encoder(source, dev);
    e.fingerprint[""] = model_fingerprint(source);
  } else {
    e.english = std::make_shared<PrecomputedEncoder>(a.embeddings);
    e.fingerprint[""] = hash_files(kFnvOffset, a.embeddings);
  }
  e.describe["en"] = {{"model", e.english->origin}};
  const auto maps = by_language(a.align, "--align", "W.layer{layer}.txt");
  const auto models = by_language(a.test_models, "--test-model", "RUN_DIR");
  auto find = [](const std::vector<std::pair<std::string, std::string>>& v, const std::string& lang) {
    for (const auto& [l, x] : v)
      if (l == lang) return x;
    return std::string();
  };
  for (const auto& list : {maps, models})
    for (const auto& [lang, v] : list) {
      bool tested = false;
      for (const auto& [l, f] : tests) tested = tested || l == lang;
      SA_CHECK(tested, "--align and --test-model name test languages; {} has no --test file", lang);
    }
  for (const auto& [lang, file] : tests) {
    std::shared_ptr<const ContextualEncoder> enc = e.english;
    uint64_t fp = e.fingerprint[""];
    if (const std::string m = find(models, lang); !m.empty()) {
      const EncoderSource src = model_source(m, source.pieces);
      enc = load_encoder(src, dev);
      fp = model_fingerprint(src);
      SA_CHECK(enc->n_layers() == e.english->n_layers() && enc->dim() == e.english->dim(),
               "--test-model {}: {} layers of {} dimensions, but the English model has {} of {}", m, enc->n_layers(),
               enc->dim(), e.english->n_layers(), e.english->dim());
    }
    e.describe[lang] = {{"model", enc->origin}};
    if (const std::string w = find(maps, lang); !w.empty()) {
      std::vector<std::string> files;
      for (int l = 0; l < enc->n_layers(); ++l) {
        std::string path = w;
        if (size_t at = path.find("{layer}"); at != std::string::npos) path.replace(at, 7, std::to_string(l));
        files.push_back(path);
      }
      fp = hash_files(hash_string(fp, "mapped"), files);
      enc = std::make_shared<AlignedEncoder>(enc, read_layer_maps(w, enc->n_layers(), enc->dim(), enc->device()));
      e.describe[lang]["align"] = w;
    }
    e.test[lang] = enc;
    e.fingerprint[lang] = fp;
  }
  return e;
}

// What cached features depend on: the encoder's fingerprint (its files and map), the data file,
// the CJK lexicon and the settings that shape the features. The lexicon files and settings are
// hashed once per command, each data file once.
class FeatureKeys {
 public:
  explicit FeatureKeys(const TaskArgs& a) {
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

// Chinese or Japanese text without a lexicon: said once per file, as its tokens will not be the
// corpora's.
void warn_cjk(const std::string& file) {
  std::fprintf(stderr, "%s: warning: Chinese or Japanese text and no --cedict or --edict: each run of CJK characters "
               "stays one token, not the bilingual corpora's words\n", file.c_str());
}

// The CJK lexicon of --cedict/--edict/--muse, or none.
std::unique_ptr<CjkLexicon> cjk_lexicon(const TaskArgs& a) {
  if (a.cedict.empty() && a.edict.empty()) {
    SA_CHECK(a.muse.empty(), "--muse adds words to a CJK lexicon: give --cedict or --edict too");
    return nullptr;
  }
  auto lex = std::make_unique<CjkLexicon>();
  if (!a.cedict.empty()) lex->add_cedict(a.cedict);
  if (!a.edict.empty()) lex->add_edict(a.edict);
  if (!a.muse.empty()) {
    int lo = 0, hi = 0;
    char colon = 0;
    std::istringstream ss(a.muse_skip);
    SA_CHECK((ss >> lo >> colon >> hi) && colon == ':' && lo <= hi && ss.eof(),
             "--muse-skip-ranks {}: expected A:B with A <= B", a.muse_skip);
    lex->add_muse_targets(a.muse, lo, hi);
  }
  lex->finish(a.cjk_max_len);
  std::fprintf(stderr, "CJK lexicon: %zu words of 2..%d characters\n", lex->size(), a.cjk_max_len);
  return lex;
}

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

// How many runs train at once: one on a GPU, else --jobs (0: one per OpenMP thread), at most --runs.
int run_jobs(const TaskArgs& a) {
  if (resolve_device(a.device).is_cuda()) return 1;
  return std::clamp(a.jobs > 0 ? a.jobs : omp_get_max_threads(), 1, a.runs);
}

// Every run's scores, run_jobs(a) at a time: the jobs are the threads of one OpenMP region, so
// each run's BLAS calls and OpenMP loops run on its own thread (OpenBLAS's OpenMP build stays on
// the calling thread inside a parallel region). Two runs side by side on two cores finish sooner
// than one after the other on both: the classifiers' GEMMs are small and their elementwise ops
// do not split well over threads. Each run's numbers do not depend on the runs beside it.
std::vector<RunScores> train_runs(const TaskArgs& a, const std::function<RunScores(int, uint64_t)>& one_run) {
  const int jobs = run_jobs(a);
  std::vector<RunScores> out(static_cast<size_t>(a.runs));
  auto run = [&](int r) { out[static_cast<size_t>(r)] = one_run(r, a.seed + static_cast<uint64_t>(r)); };
  if (jobs == 1) {
    for (int r = 0; r < a.runs; ++r) run(r);
    return out;
  }
  std::fprintf(stderr, "training %d runs, %d at a time on a thread each (--jobs)\n", a.runs, jobs);
  std::atomic<int> next{0};
  std::vector<std::exception_ptr> errors(static_cast<size_t>(jobs));
#pragma omp parallel num_threads(jobs)
  {
    const int j = omp_get_thread_num();
    try {
      for (int r = next++; r < a.runs; r = next++) run(r);
    } catch (...) {
      errors[static_cast<size_t>(j)] = std::current_exception();
      next = a.runs;  // the others stop after their current run
    }
  }
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
  return out;
}

// The fit options every task takes from its arguments, for run `run` with `seed`.
FitOptions fit_options(const TaskArgs& a, const char* task, int run, uint64_t seed) {
  FitOptions fo;
  fo.batch_size = a.batch_size, fo.max_epochs = a.max_epochs, fo.patience = a.patience, fo.lr = a.lr, fo.seed = seed;
  fo.clip = a.clip;
  fo.label = std::string(task) + " run " + std::to_string(run + 1) + "/" + std::to_string(a.runs);
  // Runs side by side (--jobs): only the first job shows the epoch in progress, so lines never mix;
  // the others run at about its pace.
  fo.epoch_progress = omp_get_thread_num() == 0;
  return fo;
}

// Runs `one_run(run, seed)` for seeds seed..seed+runs-1, then prints the table (mean ± sample std
// per language) and writes the JSON report.
int run_and_report(const TaskArgs& a, const Encoders& enc, const LayerSpec& spec,
                   const std::vector<std::pair<std::string, std::string>>& tests, TaskReport rep,
                   const std::function<RunScores(int, uint64_t)>& one_run) {
  std::vector<double> dev;
  std::vector<std::vector<double>> test(tests.size());
  nlohmann::json runs = nlohmann::json::array();
  const std::vector<RunScores> scores = train_runs(a, one_run);
  for (int run = 0; run < a.runs; ++run) {
    const uint64_t seed = a.seed + static_cast<uint64_t>(run);
    const RunScores& r = scores[static_cast<size_t>(run)];
    nlohmann::json j = {{"seed", seed}, {"epochs", r.fit.epochs}, {"best_epoch", r.fit.best_epoch}, {"dev_en", r.fit.best_dev}};
    dev.push_back(r.fit.best_dev);
    for (size_t t = 0; t < tests.size(); ++t) {
      test[t].push_back(r.test[t]);
      j["test"][tests[t].first] = r.test[t];
    }
    runs.push_back(j);
  }
  nlohmann::json report = {{"task", rep.task},     {"metric", rep.metric}, {"encoders", enc.describe},
                           {"layers", spec.name()}, {"settings", rep.settings}, {"runs", runs}};
  std::printf("%s: %s over %d runs, mean ± sample std (%s, layers %s)\n", rep.task.c_str(), rep.metric.c_str(), a.runs,
              enc.english->origin.c_str(), spec.name().c_str());
  const int d = rep.decimals;
  auto [dm, ds] = mean_std(dev);
  std::printf("  %-10s %.*f ± %.*f\n", "en (dev)", d, dm, d, ds);
  report["dev_en"] = {{"mean", dm}, {"std", ds}};
  for (size_t t = 0; t < tests.size(); ++t) {
    const auto& [lang, file] = tests[t];
    auto [m, sd] = mean_std(test[t]);
    const auto& de = enc.describe[lang];
    const std::string via = (de.contains("align") ? " mapped by " + de["align"].get<std::string>() : "") +
                            (de["model"] != enc.describe["en"]["model"] ? " through " + de["model"].get<std::string>() : "");
    std::printf("  %-10s %.*f ± %.*f   %s%s%s\n", lang.c_str(), d, m, d, sd, file.c_str(),
                t < rep.test_notes.size() ? rep.test_notes[t].c_str() : "", via.c_str());
    nlohmann::json j = {{"mean", m}, {"std", sd}, {"file", file}};
    if (t < rep.test_info.size()) j.update(rep.test_info[t]);
    report["test"][lang] = j;
  }
  if (!a.out.empty()) write_file_atomically(a.out, report.dump(2) + "\n");
  return 0;
}

int run_sent(const TaskArgs& a) {
  const Device dev = resolve_device(a.device);
  const std::vector<std::pair<std::string, std::string>> tests = by_language(a.tests, "--test", "FILE");
  const Encoders encs = open_encoders(a, dev, tests);
  const LayerSpec spec = parse_layer_spec(a.layers, encs.english->n_layers());
  FeatureKeys feature_key(a);
  const std::unique_ptr<CjkLexicon> lexicon = cjk_lexicon(a);
  // Data: the English training file, its dev part, and each test file.
  // lang: "" for English (train, dev), else a test language, whose encoder reads it.
  auto load = [&](const std::string& file, const std::string& lang) {
    const ReviewSet reviews = read_reviews(file);
    if (!lexicon)
      for (const Review& r : reviews.reviews)
        if (has_cjk(r.text)) {
          warn_cjk(file);
          break;
        }
    SentimentData d = prepare_sentiment(reviews, a.max_tokens, encs.of(lang).lowercase, lexicon.get());
    SA_CHECK(!d.labels.empty(), "{}: no review with 1, 2, 4 or 5 stars", file);
    std::fprintf(stderr, "%s: %zu reviews (%d with 3 stars and %d without text left out, %d cut at %d tokens)\n",
                 file.c_str(), d.labels.size(), d.neutral, d.empty, d.truncated, a.max_tokens);
    return d;
  };
  auto features = [&](const std::string& file, const SentimentData& d, const std::string& lang) {
    const ContextualEncoder& enc = encs.of(lang);
    return cached_tensor(a.cache,
                         feature_key(encs.fingerprint.at(lang), file, enc.lowercase, "xling sent review means v1"),
                         file, dev, [&] { return review_means(enc, d, spec, "embed " + file); },
                         static_cast<int64_t>(d.labels.size()));
  };
  SentimentData train = load(a.train, "");
  Tensor train_x = features(a.train, train, "");
  SentimentData dev_data;
  Tensor dev_x;
  if (!a.dev.empty()) {
    dev_data = load(a.dev, "");
    dev_x = features(a.dev, dev_data, "");
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
    SentimentData d = load(file, lang);
    Tensor x = features(file, d, lang);
    test_sets.emplace_back(std::move(d), x);
  }

  TaskReport rep{"sent", "accuracy", 4,
                 {{"hidden", a.hidden}, {"dropout", a.dropout}, {"lr", a.lr}, {"batch_size", a.batch_size},
                  {"max_epochs", a.max_epochs}, {"patience", a.patience}, {"max_tokens", a.max_tokens},
                  {"train_reviews", train.labels.size()}, {"dev_reviews", dev_data.labels.size()}},
                 {},
                 {}};
  for (const auto& [d, x] : test_sets) {
    rep.test_info.push_back({{"reviews", d.labels.size()}});
    rep.test_notes.push_back(" (" + std::to_string(d.labels.size()) + " reviews)");
  }
  return run_and_report(a, encs, spec, tests, rep, [&](int run, uint64_t seed) {
    DenseClassifier clf = DenseClassifier::init(train_x.dim(1), a.hidden, 2, a.dropout, seed, dev);
    const FitOptions fo = fit_options(a, "sent", run, seed);
    Generator eval_gen(0);
    RunScores r;
    r.fit = fit_classifier(
        clf.params(), train_x.dim(0),
        [&](const std::vector<int64_t>& rows, Generator& gen) {
          std::vector<int32_t> idx(rows.begin(), rows.end()), y;
          for (int64_t i : rows) y.push_back(train.labels[static_cast<size_t>(i)]);
          const int64_t n = static_cast<int64_t>(idx.size());
          return ops::mean(ops::cross_entropy(clf.logits(ops::gather_rows(train_x, Tensor::from(idx, {n}, dev)), true, gen),
                                              Tensor::from(y, {n}, dev)));
        },
        [&] { return accuracy(clf.logits(dev_x, false, eval_gen), dev_data.labels); }, fo);
    NoGrad ng;
    for (const auto& [d, x] : test_sets) r.test.push_back(accuracy(clf.logits(x, false, eval_gen), d.labels));
    return r;
  });
}


int run_ner(const TaskArgs& a) {
  const Device dev = resolve_device(a.device);
  const std::vector<std::pair<std::string, std::string>> tests = by_language(a.tests, "--test", "FILE");
  const Encoders encs = open_encoders(a, dev, tests);
  const LayerSpec spec = parse_layer_spec(a.layers, encs.english->n_layers());
  FeatureKeys feature_key(a);
  auto load = [&](const std::string& file) {
    NerCorpus c = read_ner_file(file);
    SA_CHECK(!c.sentences.empty(), "{}: no sentences", file);
    size_t tokens = 0;
    for (const NerSentence& s : c.sentences) tokens += s.tokens.size();
    std::fprintf(stderr, "%s: %zu sentences, %zu tokens%s\n", file.c_str(), c.sentences.size(), tokens,
                 c.latin1 ? " (read as ISO-8859-1)" : "");
    return c.sentences;
  };
  const std::unique_ptr<CjkLexicon> lexicon = cjk_lexicon(a);
  auto features = [&](const std::string& file, const std::vector<NerSentence>& s, const std::string& lang) {
    const ContextualEncoder& enc = encs.of(lang);
    const Sentences tokens = sentence_tokens(s);
    // One CJK character a token (PAN-X zh/ja): with a lexicon, a word-reading encoder gets the
    // characters regrouped into the words its corpora were segmented into. The warning needs a
    // real share of such tokens, not a stray character in a German file.
    const double share = enc.reads_segmented_words() ? cjk_character_share(tokens) : 0.0;
    const bool regroup = share > 0 && lexicon;
    if (share >= 0.1 && !lexicon)
      std::fprintf(stderr, "%s: warning: one CJK character a token and no --cedict or --edict: each character is "
                   "embedded alone, not as part of the bilingual corpora's words\n", file.c_str());
    return cached_tensor(
        a.cache,
        feature_key(encs.fingerprint.at(lang), file, enc.lowercase, regroup ? "xling ner cjk words v1" : "xling ner tokens v1"),
        file, Device::cpu(),
        [&] {
          return regroup ? regrouped_token_features(enc, tokens, *lexicon, spec, "embed " + file)
                         : token_features(enc, tokens, spec, "embed " + file);
        },
        sentence_offsets(tokens).back());
  };
  const std::vector<NerSentence> train = load(a.train), dev_s = load(a.dev);
  const Tensor train_x = features(a.train, train, ""), dev_x = features(a.dev, dev_s, "");
  const TagSet tagset = TagSet::of(train);
  std::vector<std::vector<int32_t>> train_tags;
  for (const NerSentence& s : train) train_tags.push_back(tagset.bioes_ids(s.tags));
  const std::vector<int64_t> train_off = sentence_offsets(sentence_tokens(train));
  std::vector<std::vector<NerSentence>> test_s;
  std::vector<Tensor> test_x;
  for (const auto& [lang, file] : tests) {
    test_s.push_back(load(file));
    test_x.push_back(features(file, test_s.back(), lang));
  }
  if (!a.predictions.empty()) std::filesystem::create_directories(a.predictions);

  NerTaggerOptions to;
  to.hidden = a.hidden, to.word_dropout = a.word_dropout, to.locked_dropout = a.dropout;
  TaskReport rep{"ner", "span F1 (conlleval)", 2,
                 {{"hidden", a.hidden}, {"word_dropout", a.word_dropout}, {"locked_dropout", a.dropout}, {"lr", a.lr},
                  {"min_lr", a.min_lr}, {"batch_size", a.batch_size}, {"max_epochs", a.max_epochs},
                  {"patience", a.patience}, {"tags", tagset.tags}},
                 {},
                 {}};
  std::vector<bool> misc_to_o;
  for (const auto& s : test_s) {
    misc_to_o.push_back(!has_misc(s));
    rep.test_info.push_back({{"misc_as_o", misc_to_o.back()}});
    rep.test_notes.push_back(misc_to_o.back() ? " (no MISC in its gold tags: predicted MISC counted as O)" : "");
  }
  return run_and_report(a, encs, spec, tests, rep, [&](int run, uint64_t seed) {
    NerTagger tagger = NerTagger::init(train_x.dim(1), static_cast<int64_t>(tagset.tags.size()), to, seed, dev);
    FitOptions fo = fit_options(a, "ner", run, seed);
    fo.schedule = FitOptions::Schedule::SgdAnneal;
    fo.min_lr = a.min_lr;
    RunScores r;
    r.fit = fit_classifier(
        tagger.params(), static_cast<int64_t>(train.size()),
        [&](const std::vector<int64_t>& rows, Generator& gen) {
          const SentenceBatch b = packed_batch(train_x, train_off, std::vector<size_t>(rows.begin(), rows.end()), &train_tags, dev);
          return tagger.loss(b.x, b.lengths, b.tags, gen);
        },
        [&] { return conlleval(tag_sentences(tagger, tagset, dev_x, dev_s, false, dev)).all.f1(); }, fo);
    for (size_t t = 0; t < tests.size(); ++t) {
      const std::vector<TaggedSentence> tagged = tag_sentences(tagger, tagset, test_x[t], test_s[t], misc_to_o[t], dev);
      r.test.push_back(conlleval(tagged).all.f1());
      if (!a.predictions.empty())
        write_file_atomically((std::filesystem::path(a.predictions) /
                               (tests[t].first + ".run" + std::to_string(run + 1) + ".txt")).string(),
                              conlleval_input(tagged));
    }
    return r;
  });
}

int run_xnli(const TaskArgs& a) {
  const Device dev = resolve_device(a.device);
  const std::vector<std::pair<std::string, std::string>> tests = by_language(a.tests, "--test", "FILE");
  const Encoders encs = open_encoders(a, dev, tests);
  const LayerSpec spec = parse_layer_spec(a.layers, encs.english->n_layers());
  FeatureKeys feature_key(a);
  const std::unique_ptr<CjkLexicon> lexicon = cjk_lexicon(a);
  // A file's pairs and the token features of their premises and hypotheses.
  struct Pairs {
    NliData data;
    Tensor p, h;
    std::vector<int64_t> p_off, h_off;
  };
  auto load = [&](const std::string& file, const std::string& lang) {
    const ContextualEncoder& enc = encs.of(lang);
    Pairs s;
    const NliSet set = read_nli_file(file);
    if (!lexicon)
      for (const NliPair& p : set.pairs)
        if (has_cjk(p.premise) || has_cjk(p.hypothesis)) {
          warn_cjk(file);
          break;
        }
    s.data = prepare_nli(set, lexicon.get());
    SA_CHECK(!s.data.labels.empty(), "{}: no labeled pair", file);
    std::fprintf(stderr, "%s: %zu pairs (%d without a gold label and %d with an empty side left out)\n", file.c_str(),
                 s.data.labels.size(), s.data.unlabeled, s.data.empty);
    auto feats = [&](const Sentences& side, const char* what) {
      return cached_tensor(a.cache,
                           feature_key(encs.fingerprint.at(lang), file, enc.lowercase, std::string("xling nli ") + what),
                           file + " (" + what + ")", Device::cpu(),
                           [&] { return token_features(enc, side, spec, std::string("embed ") + what + " " + file); },
                           sentence_offsets(side).back());
    };
    s.p = feats(s.data.premises, "premises");
    s.h = feats(s.data.hypotheses, "hypotheses");
    s.p_off = sentence_offsets(s.data.premises);
    s.h_off = sentence_offsets(s.data.hypotheses);
    return s;
  };
  const Pairs train = load(a.train, ""), dev_p = load(a.dev, "");
  std::vector<Pairs> test_p;
  for (const auto& [lang, file] : tests) test_p.push_back(load(file, lang));
  auto logits = [&](const NliClassifier& c, const Pairs& s, const std::vector<size_t>& rows, bool training,
                    Generator& gen) {
    const SentenceBatch p = padded_batch(s.p, s.p_off, rows, nullptr, dev), h = padded_batch(s.h, s.h_off, rows, nullptr, dev);
    return c.logits(p.x, p.lengths, h.x, h.lengths, training, gen);
  };
  auto accuracy_on = [&](const NliClassifier& c, const Pairs& s) {
    Generator unused(0);
    size_t right = 0;
    for (size_t b0 = 0; b0 < s.data.labels.size(); b0 += 128) {
      std::vector<size_t> rows;
      std::vector<int32_t> gold;
      for (size_t r = b0; r < std::min(s.data.labels.size(), b0 + 128); ++r) rows.push_back(r), gold.push_back(s.data.labels[r]);
      right += static_cast<size_t>(std::lround(accuracy(logits(c, s, rows, false, unused), gold) * static_cast<double>(rows.size())));
    }
    return static_cast<double>(right) / static_cast<double>(s.data.labels.size());
  };

  TaskReport rep{"xnli", "accuracy", 4,
                 {{"hidden", a.hidden}, {"dense", a.dense}, {"dropout", a.dropout}, {"lr", a.lr},
                  {"batch_size", a.batch_size}, {"max_epochs", a.max_epochs}, {"patience", a.patience},
                  {"train_pairs", train.data.labels.size()}, {"dev_pairs", dev_p.data.labels.size()}},
                 {},
                 {}};
  for (const Pairs& p : test_p) {
    rep.test_info.push_back({{"pairs", p.data.labels.size()}});
    rep.test_notes.push_back(" (" + std::to_string(p.data.labels.size()) + " pairs)");
  }
  return run_and_report(a, encs, spec, tests, rep, [&](int run, uint64_t seed) {
    NliClassifier clf = NliClassifier::init(train.p.dim(1), a.hidden, a.dense, a.dropout, seed, dev);
    const FitOptions fo = fit_options(a, "xnli", run, seed);
    RunScores r;
    r.fit = fit_classifier(
        clf.params(), static_cast<int64_t>(train.data.labels.size()),
        [&](const std::vector<int64_t>& rows, Generator& gen) {
          std::vector<int32_t> y;
          for (int64_t i : rows) y.push_back(train.data.labels[static_cast<size_t>(i)]);
          const Tensor l = logits(clf, train, std::vector<size_t>(rows.begin(), rows.end()), true, gen);
          return ops::mean(ops::cross_entropy(l, Tensor::from(y, {static_cast<int64_t>(y.size())}, dev)));
        },
        [&] { return accuracy_on(clf, dev_p); }, fo);
    NoGrad ng;
    for (const Pairs& p : test_p) r.test.push_back(accuracy_on(clf, p));
    return r;
  });
}

// The options every task takes: the model, the data, the runs, the cache and the report.
void add_common(CLI::App* c, TaskArgs& a, const char* what) {
  c->option_defaults()->always_capture_default();
  a.model.add_to(c);
  c->add_option("--embeddings", a.embeddings, "instead of a model: vectors in bilm-tf/AllenNLP's HDF5 layout "
                                              "(bin/embed, allennlp elmo), one file per data file, each sentence's "
                                              "tokens joined by spaces as its line; repeatable");
  c->add_option("--align", a.align,
                "LANG=W.layer{layer}.txt, repeatable (+Proj): a map from `bin/align fit` (fitted from LANG into English) "
                "applied to LANG's test vectors; \"{layer}\" picks one per layer; English is never mapped");
  c->add_option("--test-model", a.test_models,
                "LANG=RUN_DIR (ours or a BERT directory) or LANG=options.json,weights.hdf5, repeatable: embed LANG's test "
                "file with this model "
                "(ELMo+Proj: one monolingual model per language)");
  c->add_option("--train", a.train, std::string("English training ") + what)->required();
  c->add_option("--test", a.tests, std::string("LANG=FILE, repeatable: ") + what + " to test on. LANG names the "
                "row of the table and report (and picks --align/--test-model): one file may be tested under two "
                "names, e.g. es= and es-proj= with an --align for es-proj only, so a system and its +Proj variant "
                "are scored by the same English classifiers")->required();
  c->add_option("--layers", a.layers, "concat, average, top or a layer index (0: the token layer)");
  c->add_option("--runs", a.runs, "classifiers trained with seeds seed, seed+1, ...")
      ->check(CLI::Validator(positive_integer, "POSITIVE"));
  c->add_option("--seed", a.seed, "first seed");
  c->add_option("--jobs", a.jobs, "runs trained at once on the CPU, on a thread each (0: one per thread, at most --runs; "
                                  "one at a time on a GPU). A run's numbers depend on its seed and its thread count only");
  c->add_option("--batch-size", a.batch_size, std::string(what) + " per batch")
      ->check(CLI::Validator(positive_integer, "POSITIVE"));
  c->add_option("--max-epochs", a.max_epochs, "epochs at most");
  c->add_option("--clip", a.clip, "the classifier's gradients are scaled to this global norm at most");
  c->add_option("--cache", a.cache, "directory of cached vectors in HDF5, keyed by checksums of the model's files, the "
                                    "maps, the data file and the feature settings, so runs and tasks never embed a file "
                                    "twice; empty: none");
  c->add_option("--out", a.out, "JSON report: settings, each run's numbers, mean and std per language");
  c->add_option("--device", a.device, "auto, cpu, cuda or cuda:N");
}

// How Chinese and Japanese text is segmented: raw text (sent, xnli), one character a token (ner).
void add_cjk(CLI::App* c, TaskArgs& a) {
  c->add_option("--cedict", a.cedict, "CC-CEDICT: segment Chinese into its words, as the bilingual corpora were");
  c->add_option("--edict", a.edict, "EDICT (EUC-JP): segment Japanese into its words, as the bilingual corpora were");
  c->add_option("--muse", a.muse, "a MUSE dictionary whose target words join the CJK lexicon");
  c->add_option("--muse-skip-ranks", a.muse_skip, "source ranks A:B of --muse left out (held-out pairs)");
  c->add_option("--cjk-max-len", a.cjk_max_len, "longest lexicon word, in characters");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Zero-shot cross-lingual transfer with a frozen encoder: train on English, test on other languages"};
  app.require_subcommand(1);
  TaskArgs s;
  CLI::App* sent = app.add_subcommand(
      "sent", "review sentiment (MARC CSV, with or without a header row, or Webis-CLS-10 .review): 1-2 stars "
              "negative, 4-5 positive, 3 left out; the review split into sentences and cut at --max-tokens; the mean of "
              "its vectors -> dense (hidden, ReLU, dropout) -> dense to 2 classes; Adam, early stop on English dev "
              "accuracy");
  add_common(sent, s, "reviews");
  add_cjk(sent, s);
  sent->add_option("--dev", s.dev, "English dev reviews (default: --dev-fraction of --train)");
  sent->add_option("--dev-fraction", s.dev_fraction, "part of --train held out as dev when --dev is not given");
  sent->add_option("--max-tokens", s.max_tokens, "tokens kept per review (its first sentences)")
      ->check(CLI::Validator(positive_integer, "POSITIVE"));
  sent->add_option("--hidden", s.hidden, "units of the hidden dense layer");
  sent->add_option("--dropout", s.dropout, "dropout after the hidden layer");
  sent->add_option("--lr", s.lr, "Adam learning rate");
  sent->add_option("--patience", s.patience, "epochs without a better dev accuracy before stopping");

  TaskArgs n;  // Flair's SequenceTagger defaults
  n.lr = 0.1, n.max_epochs = 150, n.patience = 3;
  CLI::App* ner = app.add_subcommand(
      "ner", "named entities (CoNLL-2002/2003 column files in IOB1 or IOB2, UTF-8 or else read as ISO-8859-1, "
             "-DOCSTART- lines as document breaks; PAN-X .tsv): word dropout and locked dropout -> linear "
             "re-projection -> BiLSTM -> locked dropout -> linear -> CRF; trained and decoded in BIOES with SGD "
             "(--batch-size sentences a step, rate halved after --patience epochs without a dev F1 gain, stop below --min-lr), best "
             "English-dev epoch; span F1 as conlleval.pl; --predictions written in IOB2; predicted MISC counts as O on "
             "test sets without MISC. Files given one CJK character a token "
             "(PAN-X zh, ja) are regrouped into --cedict/--edict words for an ELMo encoder, each character scored with its "
             "word's vector");
  add_common(ner, n, "sentences");
  add_cjk(ner, n);
  ner->add_option("--dev", n.dev, "English dev sentences (CoNLL-2003 eng.testa)")->required();
  ner->add_option("--hidden", n.hidden, "BiLSTM units per direction");
  ner->add_option("--word-dropout", n.word_dropout, "chance that a token's whole vector is zeroed");
  ner->add_option("--dropout", n.dropout, "locked dropout (one mask per sentence) before and after the BiLSTM");
  ner->add_option("--lr", n.lr, "SGD's starting learning rate");
  ner->add_option("--min-lr", n.min_lr, "training stops when the halved rate falls below it");
  ner->add_option("--patience", n.patience, "epochs without a better dev F1 before the rate is halved");
  ner->add_option("--predictions", n.predictions, "directory for LANG.runK.txt files (token gold guess) that "
                                                  "conlleval.pl reads");
  TaskArgs x;  // the NYU MultiNLI baseline's settings
  x.runs = 2, x.lr = 4e-4, x.hidden = 300, x.max_epochs = 20, x.patience = 3;
  CLI::App* xnli = app.add_subcommand(
      "xnli", "sentence pairs (SICK, XNLI and MultiNLI .tsv, MultiNLI .jsonl): premise and hypothesis each through "
              "its own BiLSTM (not shared), mean-pooled over its true length -> [u; v; u - v; u * v] -> dense (ReLU) "
              "-> dropout -> 3 labels; Adam, best English-dev epoch; raw text tokenized as the corpora were");
  add_common(xnli, x, "pairs");
  add_cjk(xnli, x);
  xnli->add_option("--dev", x.dev, "English dev pairs (XNLI dev-en.tsv)")->required();
  xnli->add_option("--hidden", x.hidden, "BiLSTM units per direction (premise and hypothesis each)");
  xnli->add_option("--dense", x.dense, "units of the ReLU layer");
  xnli->add_option("--dropout", x.dropout, "dropout after the ReLU layer");
  xnli->add_option("--lr", x.lr, "Adam learning rate");
  xnli->add_option("--patience", x.patience, "epochs without a better dev accuracy before stopping");
  CLI11_PARSE(app, argc, argv);
  try {
    if (sent->parsed()) return run_sent(s);
    if (ner->parsed()) return run_ner(n);
    if (xnli->parsed()) return run_xnli(x);
  } catch (const std::exception& e) {
    return tool_failure("xling_eval", e);
  }
  return 0;
}
