// bin/wsd_eval: nearest-sense word sense disambiguation with any ELMo-style model, scored as the
// framework's Scorer.java (README "Word sense disambiguation").
//   bin/wsd_eval --model RUN_DIR --train semcor.data.xml --test senseval2.data.xml [--test ...]
//   bin/wsd_eval --options options.json --weights weights.hdf5 --train ... --test ...
//   bin/wsd_eval --baselines --train ... --test ...          (MFS and WordNet first sense only)
//   bin/wsd_eval convert-semcor SEMCOR_DIR -o semcor.data.xml  (+ semcor.gold.key.txt)
// --train also takes the SemCor 3.0 directory itself. Gold keys: NAME.gold.key.txt next to each
// NAME.data.xml. System keys go to --out (default out/wsd).
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>

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

void report(const std::string& method, const std::string& tag, const std::vector<std::string>& names,
            const std::vector<WsdKeys>& golds, const WsdPrediction& pred, const std::string& out_dir) {
  WsdKeys all_gold, all_sys;
  for (size_t t = 0; t < names.size(); ++t) {
    WsdKeys sys;
    for (const auto& [id, ks] : pred.keys)
      if (id.rfind(names[t] + ":", 0) == 0) sys[id.substr(names[t].size() + 1)] = ks;
    const WsdScore s = score_wsd(golds[t], sys);
    write_wsd_keys(sys, (fs::path(out_dir) / (names[t] + "." + tag + ".key.txt")).string());
    std::printf("%-34s %-14s %6zu %8.0f %6.1f%% %6.1f%% %6.1f%%\n", method.c_str(), names[t].c_str(), s.gold, s.answered,
                100 * s.p, 100 * s.r, 100 * s.f1);
    for (const auto& [id, ks] : golds[t]) all_gold[names[t] + ":" + id] = ks;
  }
  for (const auto& [id, ks] : pred.keys) all_sys[id] = ks;
  const WsdScore s = score_wsd(all_gold, all_sys);
  std::printf("%-34s %-14s %6zu %8.0f %6.1f%% %6.1f%% %6.1f%%", method.c_str(), "ALL", s.gold, s.answered, 100 * s.p,
              100 * s.r, 100 * s.f1);
  if (pred.backed_off) std::printf("  (%zu first-sense back-offs)", pred.backed_off);
  std::printf("\n");
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
  std::string train, out_dir = "out/wsd", wordnet = WordNetSenses::kDefaultPath, device = "auto";
  std::vector<std::string> tests;
  WsdLayer layer;
  bool filter_lemma = false, no_backoff = false, all_settings = false, baselines = false, old_backoff_flag = false;
  std::string mwe = "token";
  int batch = 64;
  model.add_to(&app);
  app.add_option("--train", train, "training corpus: NAME.data.xml (keys NAME.gold.key.txt) or the SemCor 3.0 directory");
  app.add_option("--test", tests, "evaluation set NAME.data.xml (keys NAME.gold.key.txt); repeatable");
  app.add_option("--layer", layer.spec, "0 (token layer), 1, 2, top, average or concat");
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
  CLI::App* conv = app.add_subcommand("convert-semcor", "SemCor 3.0 tag files -> unified XML + gold keys");
  std::string semcor_dir, semcor_out = "semcor.data.xml";
  conv->add_option("dir", semcor_dir, "SemCor 3.0 directory (brown1, brown2, brownv)")->required();
  conv->add_option("-o,--output", semcor_out, "NAME.data.xml to write (keys to NAME.gold.key.txt)");
  CLI11_PARSE(app, argc, argv);
  try {
    if (conv->parsed()) return convert_semcor(semcor_dir, semcor_out, wordnet);
    SA_CHECK(!train.empty() && !tests.empty(), "give --train and at least one --test (see --help)");
    model.check();
    const bool use_model = !model.source.run_dir.empty() || !model.source.options.empty();
    SA_CHECK(use_model || baselines, "give --model RUN_DIR or --options/--weights (or --baselines alone)");
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
             out_dir);
      report("WordNet first sense", "wn1", names, golds, predict_first_sense(test, wn), out_dir);
    }
    if (!use_model) return 0;
    std::unique_ptr<ContextualEncoder> enc = load_encoder(model.source, resolve_device(device));
    const bool one_token = mwe == "token";
    std::printf("model %s, layer %s%s, a multi-word instance %s\n", enc->origin.c_str(), layer.spec.c_str(),
                enc->lowercase ? ", lowercased" : "", one_token ? "as one token" : "as the mean of its words");
    auto t0 = std::chrono::steady_clock::now();
    InstanceVectors train_vecs = embed_instances(*enc, tr.corpus, {layer, batch, enc->lowercase, "train", one_token});
    const double train_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    InstanceVectors test_vecs = embed_instances(*enc, test, {layer, batch, enc->lowercase, "test", one_token});
    std::printf("embedded the training corpus in %.1f s\n", train_s);
    SenseCentroids cent = sense_centroids(train_vecs, tr.keys);
    std::printf("%zu sense centroids\n", cent.keys.size());
    print_header();
    // The paper's setting (all senses + WN1) leads.
    for (int f = 0; f < 2; ++f)
      for (int b = 1; b >= 0; --b) {
        if (!all_settings && (f != filter_lemma || b != !no_backoff)) continue;
        std::string method = std::string("nearest, ") + (f ? "lemma's senses" : "all senses") + (b ? " + WN1" : "") +
                             (!f && b ? " (paper)" : "");
        std::string tag = std::string("nearest-") + (f ? "lemma" : "all") + (b ? "-wn1" : "");
        report(method, tag, names, golds, predict_nearest(cent, test_vecs, {f == 1, b ? &wn : nullptr}), out_dir);
      }
    std::printf("system keys in %s (check with: java Scorer.java NAME.gold.key.txt %s/NAME.<method>.key.txt)\n",
                out_dir.c_str(), out_dir.c_str());
  } catch (const std::exception& e) {
    return tool_failure("wsd_eval", e);
  }
  return 0;
}
