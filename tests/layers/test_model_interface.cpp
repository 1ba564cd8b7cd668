// The model interface: a run directory read back through load_encoder and load_sense_model
// computes the model that was trained (its LSTM settings included), and the pseudo-word
// evaluation's library function counts and scores every occurrence.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "data/run_files.h"
#include "eval/pseudo_words.h"
#include "layers/load_encoder.h"
#include "sense/sense_model.h"
#include "tests/test_util.h"
#include "train/run_dir.h"
#include "train/families.h"

namespace sa {
namespace {

namespace fs = std::filesystem;

// A small text with repeated words (no shared data needed).
std::string write_corpus(const std::string& dir) {
  const std::string path = dir + "/corpus.txt";
  std::ofstream f(path);
  const char* lines[] = {"the cat sat on the mat .", "a dog ran to the park and back .",
                         "the bank of the river is green .", "she went to the bank to get money .",
                         "of all the cats , the black one sat in the sun ."};
  for (int i = 0; i < 60; ++i) f << lines[i % 5] << "\n";
  return path;
}

// Trains a tiny run in a fresh dir/run with extra config lines; returns the run directory.
// `lstm_extra` goes into the [lstm] table.
std::string train_tiny(const std::string& name, const std::string& extra, const std::string& lstm_extra = "") {
  const std::string dir = ::testing::TempDir() + "/model-" + name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string corpus = write_corpus(dir);
  std::ofstream(dir + "/tiny.cfg") << "train_prefix = \"" << corpus << "\"\nrun_dir = \"" << dir << "/run\"\n"
                                   << "batch_size = 4\nunroll_steps = 6\nn_negative_samples_batch = 8\n"
                                   << "n_steps = 6\nseed = 5\ndevice = \"cpu\"\n"
                                   << extra << "[char_cnn]\nembedding.dim = 4\nfilters = [[1, 8], [2, 8]]\nn_highway = 1\n"
                                   << "[lstm]\ndim = 16\nprojection_dim = 8\nn_layers = 2\n" << lstm_extra;
  train_model(TrainConfig::load(dir + "/tiny.cfg"), {.quiet = true});
  return dir + "/run";
}

// The first LSTM layer's outputs (layer 1 of the encoder: no residual) for a sentence.
std::vector<double> first_lstm_layer(const ContextualEncoder& e, const std::vector<std::string>& words) {
  Tensor t = e.embed({words})[0];  // [L + 1, n, 2P]
  return ops::slice(t, 0, 1, 2).values();
}

double max_abs(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m = std::max(m, std::abs(x));
  return m;
}

// lstm.cudnn = "on" trains a model without proj_clip and cell_clip (cuDNN has no proj_clip and its
// cell clip is not TF's); the embedder must compute that model, not re-apply the clips of
// config.cfg. "auto" keeps the clips, in training and embedding.
TEST(ModelInterface, EmbedderHonoursTheRunsLstmSettings) {
  const std::vector<std::string> words = {"the", "cat", "sat", "on", "the", "bank", "."};
  const double clip = 0.01;  // binds: projected outputs are larger
  for (const std::string cudnn : {"on", "auto"}) {
    SCOPED_TRACE(cudnn);
    const std::string run =
        train_tiny("cudnn-" + cudnn, "", "proj_clip = " + std::to_string(clip) + "\ncell_clip = 2.5\ncudnn = \"" + cudnn + "\"\n");
    std::ifstream in(run_files::options(run));
    const nlohmann::json options = nlohmann::json::parse(in);
    const double recorded = options["lstm"]["proj_clip"].get<double>();
    EXPECT_EQ(options["lstm"]["cell_clip"].get<double>(), cudnn == "on" ? 0.0 : 2.5);
    std::unique_ptr<ContextualEncoder> enc = load_encoder({run, "", ""}, Device::cpu());
    const std::vector<double> got = first_lstm_layer(*enc, words);
    // The trained model, from its checkpoint: the training forward at zero state, no dropout.
    LoadedRun r = load_run(run);
    ElmoEncoder trained(r.lm.bilm);
    const std::vector<double> want = first_lstm_layer(trained, words);
    ASSERT_EQ(got.size(), want.size());
    for (size_t k = 0; k < got.size(); ++k) ASSERT_NEAR(got[k], want[k], 1e-6) << "value " << k;
    if (cudnn == "on") {
      EXPECT_EQ(recorded, 0.0);
      EXPECT_GT(max_abs(got), 2 * clip);  // not clipped
    } else {
      EXPECT_EQ(recorded, clip);
      EXPECT_LE(max_abs(got), clip + 1e-7);
    }
  }
}

// A SaELMo run read back without the trainer: the sense settings from options.json and the heads
// from the newest checkpoint equal what load_run restores.
TEST(ModelInterface, SenseModelEqualsTheTrainedHeads) {
  const std::string run = train_tiny("sense", "n_context = 3\ncontextual_warmup = 2\npca_every = 2\ncluster_proj_dim = 4\n"
                                              "selection_mean = \"word_offset\"\nwarmup_init = \"data\"\n");
  SenseModel m = load_sense_model(run);
  LoadedRun r = load_run(run);
  ASSERT_TRUE(m.sense());
  EXPECT_EQ(m.options.n_context, 3);
  EXPECT_EQ(m.options.selection_mean, SenseOptions::SelectionMean::WordOffset);
  EXPECT_EQ(m.options.warmup_init, SenseOptions::WarmupInit::Data);
  for (int d = 0; d < 2; ++d) {
    EXPECT_EQ(m.heads[d].table.W.values(), r.lm.heads[d].table.W.values());
    EXPECT_EQ(m.heads[d].table.centers.values(), r.lm.heads[d].table.centers.values());
    EXPECT_EQ(m.heads[d].table.enabled, r.lm.heads[d].table.enabled);
    EXPECT_EQ(m.heads[d].proj.matrix().values(), r.lm.heads[d].proj.matrix().values());
  }
  EXPECT_EQ(m.encoder->model.lstm[1][1].W.values(), r.lm.bilm.lstm[1][1].W.values());
}

// pseudo_eval counts every occurrence of each hidden word once per pair and scores purities
// between the one-sense baseline and 1; the stateful and stateless passes see the same words.
TEST(ModelInterface, PseudoEvalCountsAndScoresEveryOccurrence) {
  const std::string dir = ::testing::TempDir() + "/model-pseudo";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string corpus = write_corpus(dir);
  const WordPairs pairs = {{"cat", "dog"}, {"bank", "river"}};
  const int64_t merged = write_pseudo_corpus(pairs, corpus, dir + "/merged.txt");
  EXPECT_EQ(merged, 12 * (1 + 1 + 2 + 1));  // each 5 lines hold cat, dog, bank twice and river
  std::ofstream(dir + "/tiny.cfg") << "train_prefix = \"" << dir << "/merged.txt\"\nrun_dir = \"" << dir << "/run\"\n"
                                   << "batch_size = 4\nunroll_steps = 6\nn_negative_samples_batch = 8\nn_steps = 8\n"
                                   << "seed = 5\ndevice = \"cpu\"\nn_context = 3\ncontextual_warmup = 3\npca_every = 2\n"
                                   << "cluster_proj_dim = 4\nselection_mean = \"word\"\n"
                                   << "[char_cnn]\nembedding.dim = 4\nfilters = [[1, 8], [2, 8]]\nn_highway = 1\n"
                                   << "[lstm]\ndim = 16\nprojection_dim = 8\nn_layers = 2\n";
  train_model(TrainConfig::load(dir + "/tiny.cfg"), {.quiet = true});
  SenseModel m = load_sense_model(dir + "/run");
  for (bool stateful : {false, true}) {
    PseudoEvalResult r = pseudo_eval(m, pairs, corpus, {1000, stateful, true});
    ASSERT_EQ(r.pairs.size(), 2u);
    EXPECT_TRUE(r.word_means);
    EXPECT_EQ(r.pairs[0].name, "cat_dog");
    EXPECT_EQ(r.pairs[0].n_a, 12);
    EXPECT_EQ(r.pairs[0].n_b, 12);
    EXPECT_EQ(r.pairs[1].n_a, 24);
    EXPECT_EQ(r.pairs[1].n_b, 12);
    for (const PseudoPairResult& p : r.pairs) {
      int split_total = 0;
      for (auto& [row, c] : p.forward_split) split_total += c[0] + c[1];
      EXPECT_EQ(split_total, p.n_a + p.n_b);
      for (int d = 0; d < 2; ++d)
        for (const ClusterScores& s : {p.stored[d], p.inference[d]}) {
          EXPECT_NEAR(s.majority, std::max(p.n_a, p.n_b) / double(p.n_a + p.n_b), 1e-12);
          EXPECT_GE(s.purity, s.majority - 1e-12);
          EXPECT_LE(s.purity, 1.0);
        }
    }
  }
  EXPECT_NE(testing::error_of([&] { pseudo_eval(m, {{"sat", "on"}}, corpus, {}); }).find("not in the run's vocabulary"),
            std::string::npos);
}

}  // namespace
}  // namespace sa
