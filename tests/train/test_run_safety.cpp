// What bin/train guarantees about its run directory: one trainer at a time, settings that cannot
// change under a run, a damaged newest checkpoint set aside, weights.hdf5 following the newest
// checkpoint, a checked vocabulary, and a rerun after SIGKILL at any rename or file write that
// gives the uninterrupted result. Plus every tool on a full file system.
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <tuple>

#include "data/hdf5_file.h"
#include "data/run_files.h"
#include "train/run_lock.h"

namespace sa {
namespace {

namespace fs = std::filesystem;

struct Ran {
  int rc = -1;      // exit code, or -1 when killed
  int signal = 0;   // the signal that killed it
  std::string out;  // stdout and stderr
};

Ran run(const std::string& cmd) {
  Ran r;
  FILE* p = popen(("(" + cmd + ") 2>&1").c_str(), "r");
  char buf[512];
  while (std::fgets(buf, sizeof buf, p)) r.out += buf;
  const int st = pclose(p);
  // The shell reports a child killed by signal s as exit code 128 + s.
  if (WIFEXITED(st)) r.rc = WEXITSTATUS(st);
  if (r.rc > 128) r.signal = r.rc - 128, r.rc = -1;
  return r;
}

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

std::string read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// A fresh directory with a small corpus and a tiny config (run_dir = dir/run); returns dir.
std::string setup(const std::string& name, const std::string& extra = "") {
  const std::string dir = ::testing::TempDir() + "/safety-" + name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream c(dir + "/corpus.txt");
  const char* lines[] = {"the cat sat on the mat .", "a dog ran to the park and back .", "the bank of the river is green ."};
  for (int i = 0; i < 40; ++i) c << lines[i % 3] << "\n";
  std::ofstream(dir + "/tiny.cfg") << "train_prefix = \"" << dir << "/corpus.txt\"\nrun_dir = \"" << dir << "/run\"\n"
                                   << "batch_size = 4\nunroll_steps = 5\nn_negative_samples_batch = 8\nn_steps = 12\n"
                                   << "log_every = 1\ncheckpoint_every = 4\nkeep_checkpoints = 2\nseed = 3\ndevice = \"cpu\"\n"
                                   << extra << "[char_cnn]\nembedding.dim = 4\nfilters = [[1, 8], [2, 8]]\nn_highway = 1\n"
                                   << "[lstm]\ndim = 16\nprojection_dim = 8\nn_layers = 2\n";
  return dir;
}

std::string train_cmd(const std::string& dir, const std::string& sets = "") {
  return "./bin/train " + dir + "/tiny.cfg" + sets;
}

std::map<int64_t, double> losses(const std::string& run) {
  std::map<int64_t, double> m;
  std::ifstream f(run_files::metrics(run));
  for (std::string line; std::getline(f, line);) {
    auto j = nlohmann::json::parse(line);
    if (j.contains("loss")) m[j["step"].get<int64_t>()] = j["loss"].get<double>();
  }
  return m;
}

std::map<std::string, std::vector<double>> weights(const std::string& run) {
  H5File f = H5File::open(run_files::weights(run));
  std::map<std::string, std::vector<double>> m;
  for (const char* name : {"char_embed", "CNN/W_cnn_0", "RNN_0/RNN/MultiRNNCell/Cell1/LSTMCell/W_0",
                           "RNN_1/RNN/MultiRNNCell/Cell0/LSTMCell/W_P_0"})
    m[name] = f.read(name).values();
  return m;
}

TEST(RunDir, SecondTrainerExitsNamingTheHolder) {
  const std::string dir = setup("lock");
  fs::create_directories(dir + "/run");
  {
    RunLock held(dir + "/run");  // this process holds the run, as a running trainer would
    Ran r = run(train_cmd(dir));
    EXPECT_EQ(r.rc, 1) << r.out;
    EXPECT_TRUE(has(r.out, "another bin/train is using this run directory (PID " + std::to_string(::getpid()) + ")")) << r.out;
    EXPECT_FALSE(fs::exists(run_files::config(dir + "/run")));  // it wrote nothing
  }
  Ran r = run(train_cmd(dir));  // released with the holder
  EXPECT_EQ(r.rc, 0) << r.out;
}

TEST(RunDir, RefusedConfigChangeWritesNothing) {
  const std::string dir = setup("config-change");
  const std::string run_dir = dir + "/run";
  ASSERT_EQ(run(train_cmd(dir, " --set n_steps=8")).rc, 0);
  const std::string cfg = read_text(run_files::config(run_dir)), opt = read_text(run_files::options(run_dir));
  Ran r = run(train_cmd(dir, " --set n_steps=12 --set learning_rate=0.1 --set lstm.dim=32"));
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(has(r.out, "learning_rate: 0.2 -> 0.1")) << r.out;
  EXPECT_TRUE(has(r.out, "lstm.dim: 16 -> 32")) << r.out;
  EXPECT_TRUE(has(r.out, "Only these may change on resume: n_steps")) << r.out;
  EXPECT_EQ(read_text(run_files::config(run_dir)), cfg);
  EXPECT_EQ(read_text(run_files::options(run_dir)), opt);
  // A longer schedule is a change a resume accepts, and config.cfg then says so.
  r = run(train_cmd(dir, " --set n_steps=12"));
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_TRUE(has(read_text(run_files::config(run_dir)), "n_steps = 12"));
  EXPECT_EQ(losses(run_dir).rbegin()->first, 12);
}

TEST(RunDir, TruncatedNewestCheckpointFallsBackToThePrevious) {
  const std::string dir = setup("truncated");
  ASSERT_EQ(run(train_cmd(dir, " --set run_dir=" + dir + "/whole --set n_steps=16")).rc, 0);
  ASSERT_EQ(run(train_cmd(dir)).rc, 0);  // 12 steps: checkpoints 8 and 12 kept
  const std::string newest = run_files::checkpoint(dir + "/run", 12);
  fs::resize_file(newest, fs::file_size(newest) / 2);
  Ran r = run(train_cmd(dir, " --set n_steps=16"));
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_TRUE(has(r.out, "moved it aside to " + newest + ".damaged")) << r.out;
  EXPECT_TRUE(has(r.out, "resuming from the previous checkpoint")) << r.out;
  EXPECT_TRUE(fs::exists(newest + ".damaged"));
  EXPECT_EQ(losses(dir + "/run"), losses(dir + "/whole"));  // steps 9-16 retrained exactly
  EXPECT_EQ(weights(dir + "/run"), weights(dir + "/whole"));
}

TEST(RunDir, WeightsFollowTheNewestCheckpoint) {
  const std::string dir = setup("weights");
  const std::string run_dir = dir + "/run";
  ASSERT_EQ(run(train_cmd(dir, " --set n_steps=4")).rc, 0);
  fs::copy_file(run_files::weights(run_dir), dir + "/step4.hdf5");
  ASSERT_EQ(run(train_cmd(dir)).rc, 0);
  const auto final_weights = weights(run_dir);
  // As if killed between the final checkpoint and its weights.hdf5: an older file, older time.
  fs::copy_file(dir + "/step4.hdf5", run_files::weights(run_dir), fs::copy_options::overwrite_existing);
  fs::last_write_time(run_files::weights(run_dir),
                      fs::last_write_time(run_files::newest_checkpoint(run_dir)) - std::chrono::seconds(5));
  ASSERT_NE(weights(run_dir), final_weights);
  Ran r = run(train_cmd(dir));
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_EQ(weights(run_dir), final_weights);
  fs::remove(run_files::weights(run_dir));  // deleted: written again
  EXPECT_EQ(run(train_cmd(dir)).rc, 0);
  EXPECT_EQ(weights(run_dir), final_weights);
}

TEST(RunDir, ChangedVocabularyIsAnError) {
  const std::string dir = setup("vocab");
  const std::string run_dir = dir + "/run";
  ASSERT_EQ(run(train_cmd(dir, " --set n_steps=4")).rc, 0);
  std::string v = read_text(run_files::vocab(run_dir));
  v.resize(v.rfind('\n', v.size() - 2) + 1);  // cut the last word, as a crash mid-write once could
  std::ofstream(run_files::vocab(run_dir)) << v;
  Ran r = run(train_cmd(dir));
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(has(r.out, run_files::vocab(run_dir) + ": the vocabulary differs")) << r.out;
}

TEST(RunDir, ConfigValuesAreCheckedWithFileAndLine) {
  const std::string dir = setup("values");
  std::ofstream(dir + "/bad.cfg") << "train_prefix = \"" << dir << "/corpus.txt\"\nrun_dir = \"" << dir << "/run\"\n"
                                  << "n_steps = -3\n";
  Ran r = run("./bin/train " + dir + "/bad.cfg");
  EXPECT_TRUE(has(r.out, dir + "/bad.cfg:3: n_steps must be >= 0 (got -3)")) << r.out;
  std::ofstream(dir + "/enum.cfg") << "train_prefix = \"" << dir << "/corpus.txt\"\nrun_dir = \"" << dir << "/run\"\n"
                                   << "selection_mean = \"bogus\"\n";
  r = run("./bin/train " + dir + "/enum.cfg");
  EXPECT_TRUE(has(r.out, dir + "/enum.cfg:3: key 'selection_mean': expected \"none\", \"global\", \"word\" or "
                             "\"word_offset\", got \"bogus\"")) << r.out;
  for (auto [set, want] : std::vector<std::pair<std::string, std::string>>{
           {"learning_rate=-1", "--set learning_rate=-1: learning_rate must be positive"},
           {"heldout_batches=0", "--set heldout_batches=0: heldout_batches must be positive"},
           {"char_cnn.n_characters=300", "char_cnn.n_characters must be 261"},
           {"heldout_prefix=/nonexistent/x.txt", "heldout_prefix '/nonexistent/x.txt' matches no file"},
           {"n_context=3 --set contextual_warmup=0", "contextual_warmup must be positive"},
           {"n_steps=0 --set n_epochs=-1", "n_epochs must be positive when n_steps is 0"},
           {"char_cnn.embedding.dim=0", "char_cnn.embedding.dim must be positive"},
           {"char_cnn.n_highway=-1", "char_cnn.n_highway must be >= 0"},
           {"n_context=3 --set remove_less_freqent_contexts=2", "remove_less_freqent_contexts must be in [0, 1]"},
           {"center_update=x", "--set center_update=x: expected \"paper\", \"released\" or \"per_token\", got \"x\""}}) {
    r = run(train_cmd(dir, " --set " + set));
    EXPECT_EQ(r.rc, 1) << r.out;
    EXPECT_TRUE(has(r.out, want)) << set << ": " << r.out;
  }
  EXPECT_FALSE(fs::exists(dir + "/run"));
}

// SIGKILL at every rename, and in the middle of the first, middle and last write of each file the
// trainer writes (checkpoints, weights, options, config, vocabulary, metrics), then a rerun: the
// loss curve and the final weights equal an uninterrupted run's.
TEST(FaultInjection, KillAtAnyRenameOrWriteThenRerunGivesTheUninterruptedResult) {
  ASSERT_TRUE(fs::exists("bin/fault_inject.so")) << "make builds bin/fault_inject.so";
  const std::string dir = setup("faults");
  const std::string shim = "LD_PRELOAD=" + fs::absolute("bin/fault_inject.so").string() + " ";
  Ran clean = run(shim + "FAULT_COUNT=" + dir + "/count " + train_cmd(dir, " --set run_dir=" + dir + "/clean"));
  ASSERT_EQ(clean.rc, 0) << clean.out;
  std::string word;
  long renames = 0, writes = 0;
  std::istringstream(read_text(dir + "/count")) >> word >> renames >> word >> writes;
  ASSERT_GE(renames, 9);  // vocab, config, options, then a checkpoint and weights.hdf5 three times
  ASSERT_GT(writes, renames);
  const auto want_losses = losses(dir + "/clean");
  const auto want_weights = weights(dir + "/clean");
  std::vector<std::pair<std::string, long>> faults;
  for (long k = 1; k <= renames; ++k) faults.emplace_back("FAULT_KILL_AT_RENAME=" + std::to_string(k), k);
  // Each file the trainer writes, cut at its first, middle and last write.
  for (const char* file : {"vocab.txt", "config.cfg", "options.json", ".safetensors", "weights.hdf5", "metrics.jsonl"}) {
    const std::string match = std::string("FAULT_WRITE_MATCH=") + file + " ";
    const std::string count = dir + "/count-" + file;
    fs::remove_all(dir + "/counted");
    ASSERT_EQ(run(shim + match + "FAULT_COUNT=" + count + " " + train_cmd(dir, " --set run_dir=" + dir + "/counted")).rc, 0);
    long ignored = 0, n = 0;
    std::istringstream(read_text(count)) >> word >> ignored >> word >> n;
    ASSERT_GT(n, 0) << file;
    for (long k : {1L, (n + 1) / 2, n}) faults.emplace_back(match + "FAULT_KILL_AT_WRITE=" + std::to_string(k), k);
  }
  for (auto [what, k] : faults) {
    SCOPED_TRACE(what);
    const std::string run_dir = dir + "/run";
    fs::remove_all(run_dir);
    Ran killed = run(shim + what + " " + train_cmd(dir));
    EXPECT_EQ(killed.signal, SIGKILL) << killed.out;
    Ran rerun = run(train_cmd(dir));
    ASSERT_EQ(rerun.rc, 0) << rerun.out;
    EXPECT_EQ(losses(run_dir), want_losses);
    EXPECT_EQ(weights(run_dir), want_weights);
  }
}

// A shipped config (one in a configs/ folder) whose corpus this machine lacks, as ../shared/data on
// a user's machine: it trains on the default corpus and says so. A path given with --set stays an
// error naming it.
TEST(RunDir, ShippedConfigWithoutItsDataTrainsOnTheDefaultCorpus) {
  const std::string dir = setup("default-corpus");
  fs::create_directories(dir + "/configs");
  std::string cfg = read_text(dir + "/tiny.cfg");
  cfg.replace(cfg.find(dir + "/corpus.txt"), (dir + "/corpus.txt").size(), dir + "/no-such-data/brown.txt");
  cfg.insert(0, "heldout_prefix = \"" + dir + "/no-such-data/heldout.txt\"\nheldout_batches = 1\n");
  std::ofstream(dir + "/configs/mine.cfg") << cfg.replace(cfg.find("n_steps = 12"), 12, "n_steps = 2");
  const Ran r = run("./bin/train " + dir + "/configs/mine.cfg");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_TRUE(has(r.out, "matches no file on this machine: training on the default corpus, build/corpus/handbook-en.train.txt"))
      << r.out;
  EXPECT_TRUE(has(read_text(run_files::config(dir + "/run")), "handbook-en.train.txt"));
  EXPECT_TRUE(has(read_text(run_files::config(dir + "/run")), "handbook-en.heldout.txt"));
  const Ran set = run("./bin/train " + dir + "/configs/mine.cfg --set train_prefix=" + dir + "/nowhere.txt --set run_dir=" + dir + "/r2");
  EXPECT_NE(set.rc, 0);
  EXPECT_TRUE(has(set.out, "nowhere.txt' matches no file")) << set.out;
}

// SIGTERM (a scheduler's notice before preemption) or SIGINT (Ctrl-C) at any step: the step ends,
// its checkpoint is written, the trainer exits with 128 + the signal saying how to resume, and the
// rerun gives the uninterrupted result. A second signal ends it at once; the rerun still does.
TEST(FaultInjection, StopSignalWritesACheckpointThenRerunGivesTheUninterruptedResult) {
  ASSERT_TRUE(fs::exists("bin/fault_inject.so")) << "make builds bin/fault_inject.so";
  const std::string dir = setup("signals");
  const std::string shim = "LD_PRELOAD=" + fs::absolute("bin/fault_inject.so").string() + " FAULT_WRITE_MATCH=metrics.jsonl ";
  ASSERT_EQ(run(train_cmd(dir, " --set run_dir=" + dir + "/clean")).rc, 0);
  const auto want_losses = losses(dir + "/clean");
  const auto want_weights = weights(dir + "/clean");
  const std::string run_dir = dir + "/run";
  // metrics.jsonl gets a line per step (log_every = 1) and one per checkpoint (every 4 steps):
  // write 2 is step 2's loss, 5 step 4's checkpoint line, 7 step 6's loss.
  for (const auto& [sig, at, step] : std::vector<std::tuple<int, int, int64_t>>{{SIGTERM, 2, 2}, {SIGINT, 5, 4}, {SIGTERM, 7, 6}}) {
    SCOPED_TRACE("signal " + std::to_string(sig) + " at write " + std::to_string(at));
    fs::remove_all(run_dir);
    const Ran stopped = run(shim + "FAULT_SIGNAL=" + std::to_string(sig) + " FAULT_SIGNAL_AT_WRITE=" + std::to_string(at) +
                            " " + train_cmd(dir));
    EXPECT_EQ(stopped.signal, sig) << stopped.out;  // exit code 128 + sig
    EXPECT_TRUE(has(stopped.out, "train: stopped at step " + std::to_string(step) + "/12")) << stopped.out;
    EXPECT_TRUE(has(stopped.out, "rerun the same command to resume")) << stopped.out;
    EXPECT_EQ(run_files::newest_checkpoint_step(run_dir), step);
    const Ran rerun = run(train_cmd(dir));
    ASSERT_EQ(rerun.rc, 0) << rerun.out;
    EXPECT_EQ(losses(run_dir), want_losses);
    EXPECT_EQ(weights(run_dir), want_weights);
  }
  // Signalled at step 5's loss line, then again at the stop's own checkpoint line: no checkpoint of
  // step 5, the process ends at once.
  fs::remove_all(run_dir);
  const Ran twice = run(shim + "FAULT_SIGNAL_AT_WRITE=6 FAULT_SIGNAL_AGAIN=1 " + train_cmd(dir));
  EXPECT_EQ(twice.signal, SIGTERM) << twice.out;
  EXPECT_FALSE(has(twice.out, "train: stopped at step")) << twice.out;
  EXPECT_EQ(run_files::newest_checkpoint_step(run_dir), 4);
  const Ran rerun = run(train_cmd(dir));
  ASSERT_EQ(rerun.rc, 0) << rerun.out;
  EXPECT_EQ(losses(run_dir), want_losses);
  EXPECT_EQ(weights(run_dir), want_weights);
}

bool no_temporaries(const std::string& dir);

// A full disk anywhere, without mounting: every write from the k-th on fails with ENOSPC. The run
// stops with the reason and leaves no temporary file; the rerun on a disk with room again gives
// the uninterrupted result. embed and export leave no output.
TEST(FaultInjection, FullDiskAtAnyWriteFailsCleanlyThenRerunGivesTheUninterruptedResult) {
  ASSERT_TRUE(fs::exists("bin/fault_inject.so")) << "make builds bin/fault_inject.so";
  const std::string dir = setup("enospc");
  const std::string shim = "LD_PRELOAD=" + fs::absolute("bin/fault_inject.so").string() + " ";
  ASSERT_EQ(run(shim + "FAULT_COUNT=" + dir + "/count " + train_cmd(dir, " --set run_dir=" + dir + "/clean")).rc, 0);
  std::string word;
  long renames = 0, writes = 0;
  std::istringstream(read_text(dir + "/count")) >> word >> renames >> word >> writes;
  ASSERT_GT(writes, 8);
  const auto want_losses = losses(dir + "/clean");
  const auto want_weights = weights(dir + "/clean");
  for (long k : {1L, writes / 4, writes / 2, 3 * writes / 4, writes}) {
    SCOPED_TRACE("FAULT_ENOSPC_AT_WRITE=" + std::to_string(k));
    const std::string run_dir = dir + "/run";
    fs::remove_all(run_dir);
    Ran full = run(shim + "FAULT_ENOSPC_AT_WRITE=" + std::to_string(k) + " " + train_cmd(dir));
    EXPECT_EQ(full.rc, 1) << full.out;
    EXPECT_TRUE(has(full.out, "No space left on device")) << full.out;
    if (fs::exists(run_dir)) {
      EXPECT_TRUE(no_temporaries(run_dir));
    }
    Ran rerun = run(train_cmd(dir));
    ASSERT_EQ(rerun.rc, 0) << rerun.out;
    EXPECT_EQ(losses(run_dir), want_losses);
    EXPECT_EQ(weights(run_dir), want_weights);
  }
  Ran r = run(shim + "FAULT_ENOSPC_AT_WRITE=1 ./bin/embed --model " + dir + "/clean --input " + dir +
              "/corpus.txt --output " + dir + "/emb.hdf5");
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(has(r.out, dir + "/emb.hdf5")) << r.out;
  EXPECT_FALSE(fs::exists(dir + "/emb.hdf5"));
  r = run(shim + "FAULT_ENOSPC_AT_WRITE=1 ./bin/export --model " + dir + "/clean --output " + dir + "/export");
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(has(r.out, "No space left on device")) << r.out;
  EXPECT_FALSE(fs::exists(dir + "/export/weights.hdf5"));
  EXPECT_TRUE(no_temporaries(dir));
}

// A small tmpfs to fill; needs root and mount(2), else the test skips saying why.
struct FullDisk {
  std::string dir;
  bool mounted = false;
  explicit FullDisk(const std::string& name, const char* size) : dir(::testing::TempDir() + "/full-" + name) {
    fs::create_directories(dir);
    mounted = ::mount("tmpfs", dir.c_str(), "tmpfs", 0, (std::string("size=") + size).c_str()) == 0;
  }
  ~FullDisk() {
    if (mounted) ::umount(dir.c_str());
  }
};

bool no_temporaries(const std::string& dir) {
  for (auto& e : fs::recursive_directory_iterator(dir))
    if (e.path().extension() == ".tmp") return false;
  return true;
}

TEST(FullDisk, EveryToolFailsCleanlyAndKeepsGoodFiles) {
  FullDisk disk("tools", "160k");
  if (!disk.mounted) GTEST_SKIP() << "cannot mount a tmpfs here (needs root): full-disk test skipped";
  const std::string dir = setup("fulldisk");
  // train: the run fits until its weights do not.
  Ran r = run(train_cmd(dir, " --set run_dir=" + disk.dir + "/run --set lstm.dim=256 --set lstm.projection_dim=64"));
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(has(r.out, "No space left on device")) << r.out;
  EXPECT_TRUE(no_temporaries(disk.dir));
  if (fs::exists(run_files::weights(disk.dir + "/run"))) H5File::open(run_files::weights(disk.dir + "/run"));
  // A good model elsewhere, for the other tools.
  ASSERT_EQ(run(train_cmd(dir, " --set n_steps=4")).rc, 0);
  fs::remove_all(disk.dir + "/run");
  std::ofstream(disk.dir + "/filler") << std::string(150 * 1024, 'x');  // leaves a few KiB
  r = run("./bin/embed --model " + dir + "/run --input " + dir + "/corpus.txt --output " + disk.dir + "/emb.hdf5");
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(has(r.out, disk.dir + "/emb.hdf5")) << r.out;
  EXPECT_FALSE(fs::exists(disk.dir + "/emb.hdf5"));
  r = run("./bin/export --model " + dir + "/run --output " + disk.dir + "/export");
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(has(r.out, "No space left on device")) << r.out;
  EXPECT_FALSE(fs::exists(disk.dir + "/export/weights.hdf5") && fs::file_size(disk.dir + "/export/weights.hdf5") == 0);
  EXPECT_TRUE(no_temporaries(disk.dir));
  // wsd_eval's key files: complete or absent, never empty.
  const std::string wsd = "../shared/data/wsd/eval/";
  if (!fs::exists(wsd + "semeval2007/semeval2007.data.xml")) GTEST_SKIP() << "wsd_eval part: no ../shared/data here";
  r = run("./bin/wsd_eval --baselines --train " + wsd + "semeval2007/semeval2007.data.xml --test " + wsd +
          "senseval2/senseval2.data.xml --out " + disk.dir + "/keys");
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(has(r.out, "No space left on device")) << r.out;
  if (fs::exists(disk.dir + "/keys")) {
    for (auto& e : fs::directory_iterator(disk.dir + "/keys")) EXPECT_GT(fs::file_size(e.path()), 0u) << e.path();
  }
  EXPECT_TRUE(no_temporaries(disk.dir));
}

}  // namespace
}  // namespace sa
