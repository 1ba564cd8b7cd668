// precision = "bf16" on the CPU twin: a short ELMo and BERT training with every matrix product
// rounded to bf16 ends within 1% of the f32 run's held-out perplexity, and not at the same value
// (the rounding is applied).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "engine/engine.h"
#include "tests/test_util.h"
#include "train/families.h"

namespace sa {
namespace {

namespace fs = std::filesystem;

// Sentences from a small first-order Markov chain over 40 words: something to learn, seeded.
void write_text(const std::string& path, uint64_t seed, int sentences) {
  std::mt19937_64 rng(seed);
  std::ofstream out(path);
  for (int s = 0; s < sentences; ++s) {
    int w = static_cast<int>(rng() % 40);
    const int len = 4 + static_cast<int>(rng() % 9);
    for (int i = 0; i < len; ++i) {
      out << "w" << w << (i + 1 < len ? " " : " .\n");
      w = (w * 7 + 3 + static_cast<int>(rng() % 4)) % 40;  // each word has 4 likely successors
    }
  }
}

TrainResult train_tiny(const std::string& name, const std::string& model_keys, const std::string& precision) {
  const std::string dir = ::testing::TempDir() + "/bf16-" + name + "-" + precision;
  fs::remove_all(dir);
  fs::create_directories(dir);
  write_text(dir + "/train.txt", 1, 600);
  write_text(dir + "/heldout.txt", 2, 60);
  std::ofstream(dir + "/run.cfg") << "train_prefix = \"" << dir << "/train.txt\"\nheldout_prefix = \"" << dir
                                  << "/heldout.txt\"\nrun_dir = \"" << dir << "/run\"\nlog_every = 1000\n"
                                  << "checkpoint_every = 1000\nseed = 3\ndevice = \"cpu\"\nprecision = \"" << precision
                                  << "\"\n" << model_keys;
  TrainOptions o;
  o.quiet = true;
  const TrainResult r = train_model(TrainConfig::load(dir + "/run.cfg"), o);
  EXPECT_FALSE(bf16_matmuls()) << "the run's precision must end with it";
  return r;
}

double heldout_after_training(const std::string& name, const std::string& model_keys, const std::string& precision) {
  return train_tiny(name, model_keys, precision).heldout_perplexity;
}

void expect_within_one_percent(const std::string& name, const std::string& keys) {
  const double f32 = heldout_after_training(name, keys, "f32"), bf16 = heldout_after_training(name, keys, "bf16");
  EXPECT_LT(std::abs(bf16 / f32 - 1), 0.01) << name << ": held-out perplexity f32 " << f32 << ", bf16 " << bf16;
  EXPECT_NE(bf16, f32) << name << ": the bf16 run should round somewhere";
}

TEST(Bf16Training, ElmoEndsWithinOnePercentOfF32) {
  expect_within_one_percent("elmo", "batch_size = 8\nunroll_steps = 10\nn_negative_samples_batch = 16\nn_steps = 150\n"
                                    "[char_cnn]\nembedding.dim = 4\nfilters = [[1, 16], [2, 16]]\nn_highway = 1\n"
                                    "[lstm]\ndim = 32\nprojection_dim = 16\nn_layers = 2\n");
}

TEST(Bf16Training, BertEndsWithinOnePercentOfF32) {
  expect_within_one_percent("bert", "model = \"bert\"\nbatch_size = 8\nn_steps = 60\nmax_seq_length = 24\n"
                                    "max_predictions = 4\nlearning_rate = 1e-3\nvocab_max_size = 80\nwarmup_steps = 10\n"
                                    "[bert]\nhidden = 32\nlayers = 2\nheads = 2\nintermediate = 64\nmax_positions = 32\n");
}

// The weights' bf16 copies (Bf16WeightCopies) change no value of a training, only launches: each
// family, SaELMo through its warm-up's end, refits and pruning, gives the same held-out
// perplexity with and without them, in fewer launches a step, and no weight changes while a step
// uses its copy (checked at every step's end).
void expect_copies_change_only_launches(const std::string& name, const std::string& keys) {
  TrainResult with, verified, without;
  {
    testing::ScopedEnv on("SA_BF16_WEIGHT_COPIES", nullptr);
    with = train_tiny(name + "-copies", keys, "bf16");
    // verify: at each step's end every copy a product took must still equal its weight rounded
    // (its reads add launches, so it is a run of its own)
    on.set("verify");
    verified = train_tiny(name + "-copies-verified", keys, "bf16");
    on.set("0");
    without = train_tiny(name + "-no-copies", keys, "bf16");
  }
  EXPECT_EQ(with.heldout_perplexity, without.heldout_perplexity) << name;
  EXPECT_EQ(verified.heldout_perplexity, without.heldout_perplexity) << name;
  ASSERT_GT(with.steady_steps, 0);
  ASSERT_EQ(with.steady_steps, without.steady_steps);
  EXPECT_LT(with.steady_counters.launches, without.steady_counters.launches) << name;
}

TEST(Bf16Training, WeightCopiesChangeOnlyLaunches) {
  const std::string elmo = "batch_size = 8\nunroll_steps = 6\nn_negative_samples_batch = 16\nn_steps = 40\n"
                           "[char_cnn]\nembedding.dim = 4\nfilters = [[1, 16], [2, 16]]\nn_highway = 1\n"
                           "[lstm]\ndim = 32\nprojection_dim = 16\nn_layers = 2\n";
  expect_copies_change_only_launches("elmo", elmo);
  expect_copies_change_only_launches(
      "saelmo", "n_context = 3\ncluster_proj_dim = 4\npca_sample = 500\npca_every = 7\npca_push_every = 2\n"
                "pca_queue_steps = 20\ncontextual_warmup = 15\nprune_first = 20\nprune_every = 12\n"
                "context_record_window = 10\nselection_mean = \"word_offset\"\ncenter_update = \"per_token\"\n" + elmo);
  expect_copies_change_only_launches("bert", "model = \"bert\"\nbatch_size = 8\nn_steps = 30\nmax_seq_length = 24\n"
                                             "max_predictions = 4\nlearning_rate = 1e-3\nvocab_max_size = 80\n"
                                             "warmup_steps = 10\n[bert]\nhidden = 32\nlayers = 2\nheads = 2\n"
                                             "intermediate = 64\nmax_positions = 32\n");
}

}  // namespace
}  // namespace sa
