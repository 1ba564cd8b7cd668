// Resume: a training run killed with SIGKILL and rerun with the same command continues from its
// last checkpoint, and on the CPU its loss curve equals an uninterrupted run with the same seed.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

namespace {

namespace fs = std::filesystem;

std::map<int64_t, double> losses(const std::string& path) {
  std::map<int64_t, double> m;
  std::ifstream f(path);
  for (std::string line; std::getline(f, line);) {
    auto j = nlohmann::json::parse(line);
    if (j.contains("loss")) m[j["step"].get<int64_t>()] = j["loss"].get<double>();
  }
  return m;
}

int64_t last_step(const std::string& path) {
  std::ifstream f(path);
  int64_t s = 0;
  for (std::string line; std::getline(f, line);) try {
      s = std::max(s, nlohmann::json::parse(line).value("step", int64_t{0}));
    } catch (...) {
    }
  return s;
}

void check_resume(const std::string& name, const std::string& extra_config) {
  const std::string corpus = "../shared/data/corpus/brown.txt";
  if (!fs::exists(corpus)) GTEST_SKIP() << "no ../shared/data here";
  SCOPED_TRACE(name);
  const std::string dir = ::testing::TempDir() + "/resume-" + name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  {  // a small real corpus: the first 400 sentences of Brown
    std::ifstream in(corpus);
    std::ofstream out(dir + "/corpus.txt");
    std::string line;
    for (int i = 0; i < 400 && std::getline(in, line); ++i) out << line << "\n";
  }
  std::ofstream(dir + "/tiny.cfg") << "train_prefix = \"" << dir << "/corpus.txt\"\n"
                                   << "batch_size = 8\nunroll_steps = 10\nn_negative_samples_batch = 64\n"
                                   << "n_steps = 60\nlog_every = 1\ncheckpoint_every = 10\nseed = 7\ndevice = \"cpu\"\n"
                                   << extra_config
                                   << "[char_cnn]\nembedding.dim = 8\nfilters = [[1, 16], [2, 16], [3, 32]]\nn_highway = 1\n"
                                   << "[lstm]\ndim = 64\nprojection_dim = 32\nn_layers = 2\n";
  auto cmd = [&](const std::string& run) {
    return std::vector<std::string>{"./bin/train", dir + "/tiny.cfg", "--set", "run_dir=" + dir + "/" + run};
  };
  auto run_to_end = [&](const std::string& run) {
    std::string c;
    for (const std::string& a : cmd(run)) c += a + " ";
    return std::system((c + "> /dev/null 2>&1").c_str());
  };
  ASSERT_EQ(run_to_end("straight"), 0);

  // Start the second run, kill it with SIGKILL once it has passed a checkpoint, rerun it.
  pid_t pid = fork();
  if (pid == 0) {
    std::vector<std::string> a = cmd("killed");
    std::vector<char*> argv;
    for (std::string& s : a) argv.push_back(s.data());
    argv.push_back(nullptr);
    freopen("/dev/null", "w", stdout);
    freopen("/dev/null", "w", stderr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  const std::string metrics = dir + "/killed/metrics.jsonl";
  for (int i = 0; i < 20000 && last_step(metrics) < 25; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the run finished before it could be killed";
  int64_t reached = last_step(metrics);
  ASSERT_LT(reached, 60);
  ASSERT_EQ(run_to_end("killed"), 0);

  auto a = losses(dir + "/straight/metrics.jsonl"), b = losses(metrics);
  ASSERT_EQ(a.size(), 60u);
  ASSERT_EQ(b.size(), 60u) << "every step logged once after the resume (killed at step " << reached << ")";
  for (auto& [step, loss] : a) EXPECT_EQ(loss, b[step]) << "step " << step;
}

TEST(TrainResume, SigkillThenRerunEqualsUninterruptedRun) { check_resume("elmo", ""); }

// ELMo with one softmax table per direction (softmax/1/W and its accumulator resume).
TEST(TrainResume, ElmoPerDirectionTablesResume) { check_resume("elmo-per-direction", "softmax_tables = \"per_direction\"\n"); }

// SaELMo: centers, projection and its queue, enabled scores and usage windows must all resume,
// and the random state resets must hit the same rows after a resume. Selection runs inside the
// fused softmax here (uniform negatives, no seeding), with word offsets from the batch mean.
TEST(TrainResume, SaelmoSigkillThenRerunEqualsUninterruptedRun) {
  check_resume("saelmo",
               "n_context = 4\ncluster_proj_dim = 8\npca_sample = 500\npca_every = 7\ncontextual_warmup = 15\n"
               "prune_first = 20\nprune_every = 12\ncontext_record_window = 10\ncenter_update = \"released\"\n"
               "state_reset = 0.3\nselection_mean = \"word_offset\"\n");
}

// Centers seeded from contexts (zero centers are the "not yet seeded" state, so they must resume
// exactly) with log-uniform negatives, and a projection queue that keeps only recent steps (each
// queued vector's step and the fitted mean resume).
TEST(TrainResume, SaelmoDataSeedingAndLogUniformNegativesResume) {
  check_resume("saelmo-data",
               "n_context = 4\ncluster_proj_dim = 8\npca_sample = 500\npca_every = 7\ncontextual_warmup = 15\n"
               "prune_first = 20\nprune_every = 12\ncontext_record_window = 10\nwarmup_init = \"data\"\nselection_mean = \"word\"\nselect_after_dropout = false\n"
               "sense_negatives = \"log_uniform\"\npca_push_every = 3\npca_queue_steps = 10\n");
}

// SaELMo with one sense table for both directions, the words budget of log-uniform negatives,
// copied senses with their Adagrad state and unsplit rare words (the counts of the targets seen
// are rebuilt while the data stream replays).
TEST(TrainResume, SaelmoSharedTablesWordBudgetAndRareWordsResume) {
  check_resume("saelmo-shared",
               "n_context = 4\ncluster_proj_dim = 8\npca_sample = 500\npca_every = 7\ncontextual_warmup = 30\n"
               "prune_first = 40\nprune_every = 12\ncontext_record_window = 10\nsoftmax_tables = \"shared\"\n"
               "sense_negatives = \"log_uniform\"\nsense_negative_budget = \"words\"\nsense_negative_rows_max = 150\n"
               "warmup_init = \"copy\"\nsplit_min_count = 4\n");
}

// Bi-SaELMo on Brown and the first 400 lines of wiki-de, with the translation loss from MUSE's
// en-de dictionary: `extra` adds settings.
void check_bilingual_resume(const std::string& name, const std::string& extra) {
  const std::string de = "../shared/data/corpus/wiki-de.txt", dict = "../shared/data/dict/muse/en-de.train.txt";
  if (!fs::exists(de) || !fs::exists(dict)) GTEST_SKIP() << "no ../shared/data here";
  const std::string de_small = ::testing::TempDir() + "/de-400.txt";
  {
    std::ifstream in(de);
    std::ofstream out(de_small);
    std::string line;
    for (int i = 0; i < 400 && std::getline(in, line); ++i) out << line << "\n";
  }
  check_resume(name, "n_context = 3\ncluster_proj_dim = 8\npca_sample = 500\npca_every = 7\n"
                     "contextual_warmup = 15\nprune_first = 20\nprune_every = 12\nlowercase = true\n" + extra +
                     "train_prefix_l2 = \"" + de_small + "\"\ndictionary = \"" + dict + "\"\n");
}

// English and German mixed sentence by sentence over a joint vocabulary, the translation sense
// chosen in word-offset frames.
TEST(TrainResume, BilingualSaelmoWithTranslationLossResumes) {
  check_bilingual_resume("bi-saelmo", "selection_mean = \"word_offset\"\n");
}

// Log-uniform sense negatives: the translation loss's log-Q shifts come from the step's draw,
// which must resume with the rng.
TEST(TrainResume, BilingualSaelmoWithLogUniformNegativesResumes) {
  check_bilingual_resume("bi-saelmo-lu", "sense_negatives = \"log_uniform\"\n");
}

// BERT: the masked-LM data stream, its masks, dropout, AdamW's moments and the learning-rate
// schedule must all continue exactly.
TEST(TrainResume, BertSigkillThenRerunEqualsUninterruptedRun) {
  check_resume("bert", "model = \"bert\"\nlowercase = true\nvocab_max_size = 600\nmax_seq_length = 24\n"
                       "max_predictions = 4\nlearning_rate = 1e-3\nwarmup_steps = 10\nall_clip_norm_val = 1.0\n"
                       "bert.hidden = 16\nbert.layers = 2\nbert.heads = 2\nbert.intermediate = 32\nbert.max_positions = 32\n");
}

// SaBERT: the sense head's centers, projection queue, usage windows and enabled rows resume with
// the BERT state, through the warm-up's end and a pruning.
TEST(TrainResume, SabertSigkillThenRerunEqualsUninterruptedRun) {
  check_resume("sabert", "model = \"bert\"\nlowercase = true\nword_pieces = true\nmax_seq_length = 24\n"
                         "max_predictions = 4\nlearning_rate = 1e-3\nwarmup_steps = 10\nall_clip_norm_val = 1.0\n"
                         "n_context = 3\ncluster_proj_dim = 4\npca_sample = 500\npca_every = 7\npca_push_every = 2\n"
                         "pca_queue_steps = 20\ncontextual_warmup = 15\nprune_first = 20\nprune_every = 12\n"
                         "context_record_window = 10\nsense_negatives = \"full\"\nwarmup_init = \"data\"\n"
                         "selection_mean = \"word_offset\"\ncenter_update = \"per_token\"\n"
                         "bert.hidden = 16\nbert.layers = 2\nbert.heads = 2\nbert.intermediate = 32\nbert.max_positions = 32\n");
}

TEST(TrainResume, SaelmoFullSoftmaxResumes) {
  check_resume("saelmo-full", "n_context = 3\ncluster_proj_dim = 8\npca_sample = 500\npca_every = 7\n"
                              "contextual_warmup = 15\nprune_first = 20\nprune_every = 12\nsense_negatives = \"full\"\n");
}

}  // namespace
