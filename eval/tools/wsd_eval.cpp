// bin/wsd_eval: nearest-sense word sense disambiguation with any ELMo-style model, scored as the
// framework's Scorer.java (README "Word sense disambiguation").
//   bin/wsd_eval --model RUN_DIR --train semcor.data.xml --test senseval2.data.xml [--test ...]
//   bin/wsd_eval --options options.json --weights weights.hdf5 --train ... --test ...
//   bin/wsd_eval --baselines --train ... --test ...          (MFS and WordNet first sense only)
//   bin/wsd_eval --model RUN_DIR --layer 0,1,2 --all-settings --log RUN_DIR/wsd.jsonl ...
//                                 (each layer from one pass of the model; scores appended to the
//                                 run's log with its newest checkpoint's step: bin/runs plot draws them)
//   bin/wsd_eval convert-semcor SEMCOR_DIR -o semcor.data.xml  (+ semcor.gold.key.txt)
// --train also takes the SemCor 3.0 directory itself. Gold keys: NAME.gold.key.txt next to each
// NAME.data.xml. System keys go to --out (default out/wsd).
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "data/run_files.h"
#include "layers/load_encoder.h"
#include "eval/wsd.h"
#include "eval/wsd_scorer.h"
#include "eval/encoder_options.h"

using namespace sa;
namespace fs = std::filesystem;

namespace {

struct TrainSet {
  WsdCorpus corpus;
  WsdKeys keys;
};

TrainSet read_train(const std::string& path, const WordNetSenses& wn) {
  if (fs::is_directory(path)) {
    SemcorConversion s = read_semcor(path, &wn);
    return {std::move(s.corpus), std::move(s.keys)};
  }
  return {read_wsd_xml(path), read_wsd_keys(gold_key_path(path))};
}

int convert_semcor(const std::string& dir, const std::string& out, const std::string& wordnet) {
  const WordNetSenses wn = WordNetSenses::load(wordnet);
  SemcorConversion s = read_semcor(dir, &wn);
  const std::string keys = gold_key_path(out);
  write_wsd_xml(s.corpus, out);
  write_wsd_keys(s.keys, keys);
  size_t tagged = 0;
  for (const auto& [id, ks] : s.keys) tagged += ks.size();
  std::printf("%s: %zu files, %zu sentences, %zu instances with %zu sense keys\n", dir.c_str(), s.files,
              s.corpus.sentences.size(), s.corpus.instances(), tagged);
  std::printf("dropped %zu sense keys not in WordNet 3.0 (%zu distinct; %zu words left without a key became plain "
              "words): stale keys of SemCor's automatic mapping from older WordNets, e.g.\n",
              s.dropped_keys, s.dropped.size(), s.dropped_instances);
  int shown = 0;
  for (const auto& [k, n] : s.dropped)
    if (n >= 20 && shown++ < 8) std::printf("  %s (%d times)\n", k.c_str(), n);
  std::printf("wrote %s and %s\n", out.c_str(), keys.c_str());
  return 0;
}

void print_header() {
  std::printf("%-34s %-14s %6s %8s %7s %7s %7s\n", "method", "test set", "gold", "answered", "P", "R", "F1");
}

// Where scores go besides stdout: one JSON object a line per test set and ALL, for `--log`.
struct ScoreLog {
  nlohmann::json fields;  // the same for every line (model, step, tokens, layer)
  std::vector<nlohmann::json> lines;
  void add(const std::string& method, const std::string& tag, const std::string& test, const WsdScore& s) {
    nlohmann::json j = fields;
    j.update({{"method", method}, {"setting", tag}, {"test", test}, {"gold", s.gold}, {"answered", s.answered},
              {"p", s.p}, {"r", s.r}, {"f1", s.f1}});
    lines.push_back(std::move(j));
  }
};

void report(const std::string& method, const std::string& tag, const std::vector<std::string>& names,
            const std::vector<WsdKeys>& golds, const WsdPrediction& pred, const std::string& out_dir, ScoreLog* log,
            const std::string& file_suffix = "") {
  WsdKeys all_gold, all_sys;
  for (size_t t = 0; t < names.size(); ++t) {
    WsdKeys sys;
    for (const auto& [id, ks] : pred.keys)
      if (id.rfind(names[t] + ":", 0) == 0) sys[id.substr(names[t].size() + 1)] = ks;
    const WsdScore s = score_wsd(golds[t], sys);
    write_wsd_keys(sys, (fs::path(out_dir) / (names[t] + "." + tag + file_suffix + ".key.txt")).string());
    std::printf("%-34s %-14s %6zu %8.0f %6.1f%% %6.1f%% %6.1f%%\n", method.c_str(), names[t].c_str(), s.gold, s.answered,
                100 * s.p, 100 * s.r, 100 * s.f1);
    if (log) log->add(method, tag, names[t], s);
    for (const auto& [id, ks] : golds[t]) all_gold[names[t] + ":" + id] = ks;
  }
  for (const auto& [id, ks] : pred.keys) all_sys[id] = ks;
  const WsdScore s = score_wsd(all_gold, all_sys);
  std::printf("%-34s %-14s %6zu %8.0f %6.1f%% %6.1f%% %6.1f%%", method.c_str(), "ALL", s.gold, s.answered, 100 * s.p,
              100 * s.r, 100 * s.f1);
  if (pred.backed_off) std::printf("  (%zu first-sense back-offs)", pred.backed_off);
  std::printf("\n");
  if (log) log->add(method, tag, "ALL", s);
}

// `--log`: lines appended whole at the end, so an interrupted evaluation leaves none of its own.
void append_lines(const std::string& path, const std::vector<nlohmann::json>& lines) {
  std::ostringstream text;
  for (const nlohmann::json& j : lines) text << j.dump() << "\n";
  std::ofstream out(path, std::ios::app | std::ios::binary);
  SA_CHECK(out << text.str() && out.flush(), "{}: cannot append the scores", path);
}

// "0,1,2" -> its layers, each checked by WsdLayer.
std::vector<WsdLayer> layer_list(const std::string& spec) {
  std::vector<WsdLayer> v;
  std::stringstream in(spec);
  for (std::string item; std::getline(in, item, ',');) v.push_back(WsdLayer{item});
  SA_CHECK(!v.empty(), "--layer: expected one or more of 0..L, top, average, concat separated by commas");
  return v;
}

// Test instances of every set in one corpus, ids prefixed by the set name (ids repeat across sets).
WsdCorpus merge_tests(const std::vector<WsdCorpus>& tests, const std::vector<std::string>& names) {
  WsdCorpus all;
  for (size_t t = 0; t < tests.size(); ++t)
    for (WsdSentence s : tests[t].sentences) {
      for (WsdToken& tok : s.tokens)
        if (!tok.id.empty()) tok.id = names[t] + ":" + tok.id;
      all.sentences.push_back(std::move(s));
    }
  return all;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Word sense disambiguation by the nearest sense centroid (Raganato et al. 2017 framework)"};
  EncoderOptions model;
  std::string train, out_dir = "out/wsd", wordnet = WordNetSenses::kDefaultPath, device = "auto", log_path;
  std::vector<std::string> tests;
  std::string layers = "top";
  bool filter_lemma = false, no_backoff = false, all_settings = false, baselines = false, old_backoff_flag = false;
  std::string mwe = "token";
  int batch = 64;
  model.add_to(&app);
  app.add_option("--train", train, "training corpus: NAME.data.xml (keys NAME.gold.key.txt) or the SemCor 3.0 directory");
  app.add_option("--test", tests, "evaluation set NAME.data.xml (keys NAME.gold.key.txt); repeatable");
  app.add_option("--layer", layers, "0 (token layer), 1, 2, top, average or concat; several separated by commas (one pass of the model)");
  // The default is the paper's Table 1 setting: all sense entries, WordNet's first sense for lemmas
  // not seen in training, a multi-word surface as one token.
  app.add_flag("--filter-lemma", filter_lemma, "choose among the lemma's senses only (default: all sense entries)");
  app.add_flag("--no-backoff", no_backoff,
               "no WordNet first sense for lemmas not seen in training (default: back off, as the paper)");
  app.add_flag("--mfs-backoff", old_backoff_flag, "the default (kept for old scripts)");
  app.add_option("--mwe", mwe, "a multi-word instance as one token (token: the paper's code) or the mean of its words (mean)")
      ->check(CLI::IsMember({"token", "mean"}));
  app.add_flag("--all-settings", all_settings,
               "report all four settings (all senses or the lemma's, with or without back-off), the paper's first");
  app.add_flag("--baselines", baselines, "also report MFS from the training keys and WordNet's first sense");
  app.add_option("--batch-size", batch, "sentences per batch")->check(CLI::Validator(positive_integer, "POSITIVE"));
  app.add_option("--device", device, "auto, cpu, cuda or cuda:N");
  app.add_option("--out", out_dir, "directory for the system key files");
  app.add_option("--wordnet", wordnet, "WordNet 3.0 index.sense");
  app.add_option("--log", log_path, "append the scores to this JSON-lines file with the run's newest checkpoint step and tokens (e.g. RUN_DIR/wsd.jsonl, which bin/runs plot draws)");
  CLI::App* conv = app.add_subcommand("convert-semcor", "SemCor 3.0 tag files -> unified XML + gold keys");
  std::string semcor_dir, semcor_out = "semcor.data.xml";
  conv->add_option("dir", semcor_dir, "SemCor 3.0 directory (brown1, brown2, brownv)")->required();
  conv->add_option("-o,--output", semcor_out, "NAME.data.xml to write (keys to NAME.gold.key.txt)");
  // What the tool reads and where a user gets it: in --help, and in the error when it is not given.
  const std::string data =
      "Data: the training corpus is SemCor 3.0 (its directory of tag files, e.g. semcor3.0/ with brown1, brown2 and "
      "brownv, or converted to the unified XML by `wsd_eval convert-semcor`), the test sets those of the unified "
      "evaluation framework of Raganato et al. (2017), WSD_Evaluation_Framework (senseval2, senseval3, semeval2007, "
      "semeval2013, semeval2015, ALL: NAME.data.xml with NAME.gold.key.txt beside it; its Training_Corpora/SemCor is "
      "SemCor in the same XML). WordNet 3.0's index.sense comes from Debian's wordnet-sense-index (`make deps`). "
      "Example: wsd_eval --model RUN --train WSD_Evaluation_Framework/Training_Corpora/SemCor/semcor.data.xml --test "
      "WSD_Evaluation_Framework/Evaluation_Datasets/senseval2/senseval2.data.xml";
  app.footer(data);
  CLI11_PARSE(app, argc, argv);
  try {
    if (conv->parsed()) return convert_semcor(semcor_dir, semcor_out, wordnet);
    SA_CHECK(!train.empty() && !tests.empty(), "needs --train (a sense-tagged training corpus) and at least one --test "
             "(an evaluation set).\n{}", data);
    model.check();
    const bool use_model = !model.source.run_dir.empty() || !model.source.options.empty();
    SA_CHECK(use_model || baselines, "give --model RUN_DIR or --options/--weights (or --baselines alone)");
    const std::vector<WsdLayer> layer_specs = layer_list(layers);
    // --log records a run's point on its curve: the step and tokens of the checkpoint evaluated.
    ScoreLog log;
    if (!log_path.empty()) {
      const std::string& dir = model.source.run_dir;
      const int64_t step = dir.empty() ? -1 : run_files::newest_checkpoint_step(dir);
      SA_CHECK(step >= 0, "--log records the scores of a run's checkpoint: give --model RUN_DIR of a run with a checkpoint");
      const int64_t tokens = fs::exists(run_files::metrics(dir))
                                 ? run_files::tokens_at_checkpoint(run_files::read_metrics(run_files::metrics(dir)), step)
                                 : -1;
      log.fields = {{"step", step}, {"model", dir}, {"mwe", mwe}};
      if (tokens >= 0) log.fields["tokens"] = tokens;
    }
    std::printf("wsd_eval: reading %s and %zu test set(s)%s\n", train.c_str(), tests.size(),
                use_model ? "; then embedding them" : "");
    fs::create_directories(out_dir);
    const WordNetSenses wn = WordNetSenses::load(wordnet);
    TrainSet tr = read_train(train, wn);
    std::vector<WsdCorpus> test_sets;
    std::vector<WsdKeys> golds;
    std::vector<std::string> names;
    for (const std::string& t : tests) {
      test_sets.push_back(read_wsd_xml(t));
      golds.push_back(read_wsd_keys(gold_key_path(t)));
      names.push_back(wsd_set_name(t));
    }
    const WsdCorpus test = merge_tests(test_sets, names);
    std::printf("train %s: %zu sentences, %zu instances; test: %zu instances in %zu sets\n", train.c_str(),
                tr.corpus.sentences.size(), tr.corpus.instances(), test.instances(), tests.size());
    print_header();
    if (baselines) {
      report("MFS (training keys)", "mfs", names, golds, predict_mfs(tr.keys, test, &wn, no_backoff ? nullptr : &wn),
             out_dir, nullptr);
      report("WordNet first sense", "wn1", names, golds, predict_first_sense(test, wn), out_dir, nullptr);
    }
    if (!use_model) return 0;
    std::unique_ptr<ContextualEncoder> enc = load_encoder(model.source, resolve_device(device));
    const bool one_token = mwe == "token";
    for (const WsdLayer& l : layer_specs) l.check(enc->n_layers() - 1);
    // Several layers: one pass of the model with every layer side by side, each taken from it.
    const WsdLayer embedded = layer_specs.size() == 1 ? layer_specs[0] : WsdLayer{"concat"};
    std::printf("model %s, layer %s%s, a multi-word instance %s\n", enc->origin.c_str(), layers.c_str(),
                enc->lowercase ? ", lowercased" : "", one_token ? "as one token" : "as the mean of its words");
    auto t0 = std::chrono::steady_clock::now();
    InstanceVectors train_all = embed_instances(*enc, tr.corpus, {embedded, batch, enc->lowercase, "train", one_token});
    const double train_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    InstanceVectors test_all = embed_instances(*enc, test, {embedded, batch, enc->lowercase, "test", one_token});
    std::printf("embedded the training corpus in %.1f s\n", train_s);
    for (const WsdLayer& l : layer_specs) {
      const bool own = layer_specs.size() == 1;
      const InstanceVectors train_vecs = own ? std::move(train_all) : layer_of_concat(train_all, l, enc->n_layers());
      const InstanceVectors test_vecs = own ? std::move(test_all) : layer_of_concat(test_all, l, enc->n_layers());
      SenseCentroids cent = sense_centroids(train_vecs, tr.keys);
      if (!own) std::printf("layer %s: ", l.spec.c_str());
      std::printf("%zu sense centroids\n", cent.keys.size());
      print_header();
      // The top layer logged by its number: one name for it however it was asked for.
      log.fields["layer"] = l.spec == "top" ? std::to_string(enc->n_layers() - 1) : l.spec;
      // The paper's setting (all senses + WN1) leads.
      for (int f = 0; f < 2; ++f)
        for (int b = 1; b >= 0; --b) {
          if (!all_settings && (f != filter_lemma || b != !no_backoff)) continue;
          std::string method = std::string("nearest, ") + (f ? "lemma's senses" : "all senses") + (b ? " + WN1" : "") +
                               (!f && b ? " (paper)" : "");
          std::string tag = std::string("nearest-") + (f ? "lemma" : "all") + (b ? "-wn1" : "");
          report(method, tag, names, golds, predict_nearest(cent, test_vecs, {f == 1, b ? &wn : nullptr}), out_dir,
                 log_path.empty() ? nullptr : &log, own ? "" : "-layer-" + l.spec);
        }
    }
    if (!log_path.empty()) {
      append_lines(log_path, log.lines);
      std::printf("scores of step %ld appended to %s\n", static_cast<long>(log.fields["step"].get<int64_t>()),
                  log_path.c_str());
    }
    std::printf("system keys in %s (check with: java Scorer.java NAME.gold.key.txt %s/NAME.<method>.key.txt)\n",
                out_dir.c_str(), out_dir.c_str());
  } catch (const std::exception& e) {
    return tool_failure("wsd_eval", e);
  }
  return 0;
}
