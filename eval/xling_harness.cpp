#include "eval/xling_harness.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <exception>
#include <numeric>
#include <sstream>

#include "data/atomic_file.h"
#include "eval/aligned_encoder.h"
#include "eval/precomputed_encoder.h"
#include "layers/bert_encoder.h"
#include "layers/load_encoder.h"

namespace sa {

namespace {

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

// How many runs train at once: one on a GPU, else --jobs (0: one per OpenMP thread), at most --runs.
int run_jobs(const XlingArgs& a) {
  if (resolve_device(a.device).is_cuda()) return 1;
  return std::clamp(a.jobs > 0 ? a.jobs : omp_get_max_threads(), 1, a.runs);
}

// Every run's scores, run_jobs(a) at a time: the jobs are the threads of one OpenMP region, so
// each run's BLAS calls and OpenMP loops run on its own thread (OpenBLAS's OpenMP build stays on
// the calling thread inside a parallel region). Two runs side by side on two cores finish sooner
// than one after the other on both: the classifiers' GEMMs are small and their elementwise ops
// do not split well over threads. Each run's numbers do not depend on the runs beside it.
std::vector<RunScores> train_runs(const XlingArgs& a, const std::function<RunScores(int, uint64_t)>& one_run) {
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

}  // namespace

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

Encoders open_encoders(const XlingArgs& a, Device dev, const std::vector<std::pair<std::string, std::string>>& tests) {
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

XlingInputs::XlingInputs(const XlingArgs& a)
    : dev(resolve_device(a.device)),
      tests(by_language(a.tests, "--test", "FILE")),
      encs(open_encoders(a, dev, tests)),
      spec(parse_layer_spec(a.layers, encs.english->n_layers())),
      feature_key(a) {}

// Chinese or Japanese text without a lexicon: said once per file, as its tokens will not be the
// corpora's.
void warn_cjk(const std::string& file) {
  std::fprintf(stderr, "%s: warning: Chinese or Japanese text and no --cedict or --edict: each run of CJK characters "
               "stays one token, not the bilingual corpora's words\n", file.c_str());
}

// The CJK lexicon of --cedict/--edict/--muse, or none.
std::unique_ptr<CjkLexicon> cjk_lexicon(const XlingArgs& a) {
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

// The fit options every task takes from its arguments, for run `run` with `seed`.
FitOptions fit_options(const XlingArgs& a, const char* task, int run, uint64_t seed) {
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
int run_and_report(const XlingArgs& a, const Encoders& enc, const LayerSpec& spec,
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

// The options every task takes: the model, the data, the runs, the cache and the report.
void add_common_options(CLI::App* c, XlingArgs& a, const std::string& items) {
  const char* what = items.c_str();
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
  c->add_option("--train", a.train, std::string("English training ") + what);
  c->add_option("--test", a.tests, std::string("LANG=FILE, repeatable: ") + what + " to test on. LANG names the "
                "row of the table and report (and picks --align/--test-model): one file may be tested under two "
                "names, e.g. es= and es-proj= with an --align for es-proj only, so a system and its +Proj variant "
                "are scored by the same English classifiers");
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
void add_cjk_options(CLI::App* c, XlingArgs& a) {
  c->add_option("--cedict", a.cedict, "CC-CEDICT: segment Chinese into its words, as the bilingual corpora were");
  c->add_option("--edict", a.edict, "EDICT (EUC-JP): segment Japanese into its words, as the bilingual corpora were");
  c->add_option("--muse", a.muse, "a MUSE dictionary whose target words join the CJK lexicon");
  c->add_option("--muse-skip-ranks", a.muse_skip, "source ranks A:B of --muse left out (held-out pairs)");
  c->add_option("--cjk-max-len", a.cjk_max_len, "longest lexicon word, in characters");
}

}  // namespace sa
