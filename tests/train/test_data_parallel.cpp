// Data-parallel training over MPI: `mpirun -np 2 ./bin/train` with batch_size B takes the same
// steps as one process with batch 2B (in f64, to rounding: losses, weights, optimizer state,
// carried LSTM state, sense state), and a run whose rank was killed resumes exactly on rerun.
// The ranks run on this machine with one thread each.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "data/run_files.h"
#include "data/safetensors.h"
#include "engine/dist/communicator.h"
#include "engine/dist/nccl.h"
#include "tests/run_metrics.h"
#include "tests/test_util.h"

namespace {

namespace fs = std::filesystem;
using sa::testing::contains;
using sa::testing::run_tool;

const char* kMpiEnv = "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1";
const char* kMpiArgs = "--oversubscribe --mca btl self,vader -x OMP_NUM_THREADS=1";

// Why the MPI tests cannot run here ("" when they can).
std::string mpi_missing() {
  if (!sa::dist::available()) return "built without MPI (make MPI=0 or no libopenmpi-dev)";
  if (std::system("command -v mpirun > /dev/null 2>&1") != 0) return "no mpirun (openmpi-bin)";
  if (!fs::exists("../shared/data/corpus/brown.txt")) return "no ../shared/data here";
  // The launcher itself must work here (a container may forbid what it needs).
  static const auto probe = run_tool(std::string(kMpiEnv) + " mpirun " + kMpiArgs + " -np 2 true");
  if (probe.rc != 0) return "mpirun cannot start 2 processes here: " + probe.out;
  return "";
}

using sa::testing::metric;
std::map<int64_t, double> losses(const std::string& run) { return metric(run, "loss"); }

int64_t last_step(const std::string& run) {
  std::ifstream f(sa::run_files::metrics(run));
  int64_t s = 0;
  for (std::string line; std::getline(f, line);) try {
      s = std::max(s, nlohmann::json::parse(line).value("step", int64_t{0}));
    } catch (...) {
    }
  return s;
}

struct DpRuns {
  std::string dir, cfg;
  // "./bin/train CFG --set run_dir=DIR/RUN" plus settings.
  std::string train(const std::string& run, const std::string& sets = "") const {
    return "./bin/train " + cfg + " --set run_dir=" + dir + "/" + run + " " + sets;
  }
  std::string mpirun(int ranks, const std::string& run, const std::string& sets = "") const {
    return std::string(kMpiEnv) + " mpirun " + kMpiArgs + " -np " + std::to_string(ranks) + " " + train(run, sets);
  }
  std::string run(const std::string& name) const { return dir + "/" + name; }
};

// A tiny ELMo on the first 400 sentences of Brown, `extra` appended to its config.
DpRuns make_setup(const std::string& name, const std::string& extra) {
  DpRuns s;
  s.dir = ::testing::TempDir() + "/dp-" + name;
  fs::remove_all(s.dir);
  fs::create_directories(s.dir);
  {
    std::ifstream in("../shared/data/corpus/brown.txt");
    std::ofstream out(s.dir + "/corpus.txt");
    std::string line;
    for (int i = 0; i < 400 && std::getline(in, line); ++i) out << line << "\n";
  }
  s.cfg = s.dir + "/tiny.cfg";
  std::ofstream(s.cfg) << "train_prefix = \"" << s.dir << "/corpus.txt\"\nheldout_prefix = \"" << s.dir << "/corpus.txt\"\n"
                       << "unroll_steps = 10\nn_negative_samples_batch = 64\nlog_every = 1\ncheckpoint_every = 10\n"
                       << "seed = 7\ndevice = \"cpu\"\n"
                       << extra << "[char_cnn]\nembedding.dim = 8\nfilters = [[1, 16], [2, 16], [3, 32]]\nn_highway = 1\n"
                       << "[lstm]\ndim = 32\nprojection_dim = 16\nn_layers = 2\n";
  return s;
}

// Every tensor of the two runs' final checkpoints agrees within rel (relative to max(1, |a|)).
void expect_checkpoints_near(const std::string& a, const std::string& b, double rel) {
  const auto ca = sa::run_files::checkpoints(a), cb = sa::run_files::checkpoints(b);
  ASSERT_FALSE(ca.empty());
  ASSERT_FALSE(cb.empty());
  ASSERT_EQ(fs::path(ca.back()).filename(), fs::path(cb.back()).filename());
  const sa::SafetensorsFile fa = sa::load_safetensors(ca.back()), fb = sa::load_safetensors(cb.back());
  ASSERT_EQ(fa.tensors.size(), fb.tensors.size());
  for (const auto& [name, ta] : fa.tensors) {
    auto it = fb.tensors.find(name);
    ASSERT_NE(it, fb.tensors.end()) << name;
    ASSERT_EQ(ta.shape(), it->second.shape()) << name;
    const std::vector<double> va = ta.values(), vb = it->second.values();
    for (size_t i = 0; i < va.size(); ++i)
      ASSERT_LE(std::abs(va[i] - vb[i]), rel * std::max(1.0, std::abs(va[i]))) << name << " element " << i;
  }
}

// A run to compare with one process of batch 8: its name, ranks, settings and a line its output
// must contain.
struct Variant {
  std::string run;
  int ranks;
  std::string sets, says;
};

// Each variant takes the steps of one process with batch 8 (f64, no dropout: each rank draws its
// own dropout masks, so with dropout the runs differ by their masks): losses, held-out perplexity
// (rank 0 scores the global batch's shape) and every checkpoint tensor to 1e-9.
void check_equal_one_process(const std::string& name, const std::string& extra, const std::vector<Variant>& variants) {
  if (std::string why = mpi_missing(); !why.empty()) GTEST_SKIP() << why;
  SCOPED_TRACE(name);
  const DpRuns s = make_setup(name, "n_steps = 40\nprecision = \"f64\"\ndropout = 0\nstate_reset = 0.3\n"
                                    "heldout_every = 20\nheldout_batches = 2\n" + extra);
  const auto one = run_tool("OMP_NUM_THREADS=1 " + s.train("one", "--set batch_size=8"));
  ASSERT_EQ(one.rc, 0) << one.out;
  const auto want = losses(s.run("one")), want_heldout = metric(s.run("one"), "heldout_perplexity");
  ASSERT_EQ(want.size(), 40u);
  ASSERT_EQ(want_heldout.size(), 2u);
  for (const Variant& v : variants) {
    SCOPED_TRACE(v.run);
    const auto r = run_tool(v.ranks == 1 ? "OMP_NUM_THREADS=1 " + s.train(v.run, v.sets) : s.mpirun(v.ranks, v.run, v.sets));
    ASSERT_EQ(r.rc, 0) << r.out;
    EXPECT_TRUE(contains(r.out, v.says)) << r.out;
    const auto got = losses(s.run(v.run)), got_heldout = metric(s.run(v.run), "heldout_perplexity");
    ASSERT_EQ(got.size(), 40u) << "rank 0 alone logs each step once";
    for (auto& [step, loss] : want) EXPECT_NEAR(loss, got.at(step), 1e-9 * std::abs(loss)) << "step " << step;
    ASSERT_EQ(got_heldout.size(), 2u);
    for (auto& [step, ppl] : want_heldout) EXPECT_NEAR(ppl, got_heldout.at(step), 1e-9 * ppl) << "held-out, step " << step;
    // Weights, Adagrad's accumulators, the global batch's carried state and, for SaELMo, centers,
    // enabled rows, projection, its queue and the usage windows.
    expect_checkpoints_near(s.run("one"), s.run(v.run), 1e-9);
  }
}

// Two ranks of batch 4 against one process of batch 8.
void check_two_ranks_equal_doubled_batch(const std::string& name, const std::string& extra) {
  check_equal_one_process(name, extra, {{"two", 2, "--set batch_size=4", "data parallel: 2 ranks x 4 rows = batches of 8 x 10"}});
}

TEST(DataParallel, TwoRanksEqualOneProcessWithTheDoubledBatch) { check_two_ranks_equal_doubled_batch("elmo", ""); }

// Selection inside the fused softmax with word offsets from the global batch mean, per-token
// center updates, projection refits, the end of the warm-up and pruning.
TEST(DataParallel, SaelmoTwoRanksEqualOneProcessWithTheDoubledBatch) {
  check_two_ranks_equal_doubled_batch(
      "saelmo", "n_context = 3\ncluster_proj_dim = 4\npca_sample = 500\npca_every = 7\npca_push_every = 2\n"
                "pca_queue_steps = 20\ncontextual_warmup = 15\nprune_first = 20\nprune_every = 12\n"
                "context_record_window = 10\nselection_mean = \"word_offset\"\ncenter_update = \"per_token\"\n");
}

// Centers seeded from contexts (sequential over the global batch) with log-uniform negatives.
TEST(DataParallel, SaelmoSeededCentersTwoRanksEqualOneProcess) {
  check_two_ranks_equal_doubled_batch(
      "saelmo-seeded", "n_context = 3\ncluster_proj_dim = 4\npca_sample = 500\npca_every = 7\ncontextual_warmup = 15\n"
                       "prune_first = 20\nprune_every = 12\ncontext_record_window = 10\nwarmup_init = \"data\"\n"
                       "selection_mean = \"word\"\nsense_negatives = \"log_uniform\"\n");
}

// SaELMo settings that exercise every part of a sharded step: selection inside the fused softmax
// with word offsets, per-token center updates, projection refits, the warm-up's end, pruning.
const char* kShardedSaelmo =
    "n_context = 3\ncluster_proj_dim = 4\npca_sample = 500\npca_every = 7\npca_push_every = 2\n"
    "pca_queue_steps = 20\ncontextual_warmup = 15\nwarmup_init = \"copy\"\nprune_first = 20\nprune_every = 12\n"
    "context_record_window = 10\nselection_mean = \"word_offset\"\ncenter_update = \"per_token\"\n";

// Sense tables sharded over the ranks (each stores half the words' rows; a step gathers the rows
// it reads) train the model a replicated run trains: on one process, and on two ranks against one
// process with the doubled batch. The checkpoints are the same files.
void check_sharded_equals_replicated(const std::string& name, const std::string& extra) {
  check_equal_one_process(name, extra,
                          {{"one-sharded", 1, "--set batch_size=8 --set sense_tables=sharded", "per rank, sharded over 1 rank"},
                           {"two-sharded", 2, "--set batch_size=4 --set sense_tables=sharded", "per rank, sharded over 2 ranks"}});
}

TEST(DataParallel, ShardedSenseTablesEqualReplicated) { check_sharded_equals_replicated("sharded", kShardedSaelmo); }

// Log-uniform negatives (with their log-Q shifts) and centers seeded from contexts.
TEST(DataParallel, ShardedSenseTablesWithLogUniformNegativesEqualReplicated) {
  check_sharded_equals_replicated(
      "sharded-loguniform", "n_context = 3\ncluster_proj_dim = 4\npca_sample = 500\npca_every = 7\ncontextual_warmup = 15\n"
                            "prune_first = 20\nprune_every = 12\ncontext_record_window = 10\nwarmup_init = \"data\"\n"
                            "selection_mean = \"word\"\nsense_negatives = \"log_uniform\"\n");
}

// Bi-SaELMo: the translation loss reads the targets' dictionary translations, which the working
// table gathers too. The "second language" is the same text; `pairs` join frequent words.
void check_sharded_bilingual(const std::string& name, const std::string& pairs, const std::string& extra) {
  if (std::string why = mpi_missing(); !why.empty()) GTEST_SKIP() << why;
  const std::string dir = ::testing::TempDir() + "/dp-" + name, dict = dir + "-dict.txt";
  std::ofstream(dict) << pairs;
  check_sharded_equals_replicated(name, std::string(kShardedSaelmo) + "train_prefix_l2 = \"" + dir +
                                            "/corpus.txt\"\ndictionary = \"" + dict + "\"\n" + extra);
}

TEST(DataParallel, ShardedBilingualSenseTablesEqualReplicated) {
  check_sharded_bilingual("sharded-bi", "the of\nof the\nand a\na and\nin to\nto in\nhe it\nit he\nthat is\nis was\n", "");
}

// The dictionary by language in both directions (each token looks up its own language's side;
// the working table remaps both sides), with only the best candidate in the softmax.
TEST(DataParallel, ShardedBilingualByLanguageEqualsReplicated) {
  check_sharded_bilingual("sharded-lang", "the of\nand a\nin to\nhe it\nthat is\n",
                          "dictionary_by_language = true\ndictionary_both_ways = true\ntranslation_candidates = \"best\"\n");
}

// Log-uniform negatives with the translation loss: the candidates' log-Q shifts are looked up by
// global word id through the working table, so they equal the replicated table's.
TEST(DataParallel, ShardedBilingualLogUniformEqualsReplicated) {
  check_sharded_bilingual("sharded-bi-lu", "the of\nof the\nand a\na and\nin to\nto in\nhe it\nit he\n",
                          "sense_negatives = \"log_uniform\"\n");
}

// A sharded run whose rank 0 is killed while it writes a checkpoint resumes exactly.
TEST(DataParallel, ShardedRunKilledAtRenameResumesExactly) {
  if (std::string why = mpi_missing(); !why.empty()) GTEST_SKIP() << why;
  const DpRuns s = make_setup("sharded-kill", std::string("n_steps = 60\nbatch_size = 4\nsense_tables = \"sharded\"\n") +
                                                  kShardedSaelmo);
  const auto straight = run_tool(s.mpirun(2, "straight"));
  ASSERT_EQ(straight.rc, 0) << straight.out;
  const std::string shim = "-x LD_PRELOAD=" + fs::absolute("bin/fault_inject.so").string() + " -x FAULT_KILL_AT_RENAME=6 ";
  const auto killed = run_tool(std::string(kMpiEnv) + " mpirun " + kMpiArgs + " " + shim + "-np 2 " + s.train("killed"));
  ASSERT_NE(killed.rc, 0) << killed.out;
  ASSERT_LT(last_step(s.run("killed")), 60);
  const auto rerun = run_tool(s.mpirun(2, "killed"));
  ASSERT_EQ(rerun.rc, 0) << rerun.out;
  EXPECT_TRUE(contains(rerun.out, "resuming")) << rerun.out;
  const auto want = losses(s.run("straight")), got = losses(s.run("killed"));
  ASSERT_EQ(got.size(), 60u);
  for (auto& [step, loss] : want) EXPECT_EQ(loss, got.at(step)) << "step " << step;
  expect_checkpoints_near(s.run("straight"), s.run("killed"), 0.0);
}

// The pid of rank `rank` among mpirun's children (-1 if none yet).
pid_t rank_pid(pid_t mpirun, int rank) {
  const auto kids = run_tool("pgrep -P " + std::to_string(mpirun));
  std::istringstream in(kids.out);
  for (long pid; in >> pid;) {
    std::ifstream env("/proc/" + std::to_string(pid) + "/environ");
    const std::string all((std::istreambuf_iterator<char>(env)), std::istreambuf_iterator<char>());
    if (contains(all, std::string("OMPI_COMM_WORLD_RANK=") + std::to_string(rank) + '\0')) return static_cast<pid_t>(pid);
  }
  return -1;
}

// The exact softmax over every enabled sense row gives the sense tables dense gradients.
TEST(DataParallel, SaelmoFullSoftmaxTwoRanksEqualOneProcess) {
  check_two_ranks_equal_doubled_batch(
      "saelmo-full", "n_context = 3\ncluster_proj_dim = 4\npca_sample = 500\npca_every = 7\ncontextual_warmup = 15\n"
                     "prune_first = 20\nprune_every = 12\ncontext_record_window = 10\nsense_negatives = \"full\"\n");
}

// NCCL on one GPU: the library loads, a one-rank communicator forms, and its sum is the identity.
TEST(DataParallel, NcclAllReduceOnOneGpu) {
  if (sa::cuda_device_count() == 0) GTEST_SKIP() << "no GPU";
  if (!sa::dist::nccl_available()) GTEST_SKIP() << "no NCCL (built without its header, or libnccl.so.2 not loadable)";
  const std::vector<double> v = {1.5, -2.0, 3.25, 0.0, 7.0};
  for (sa::DType dt : {sa::DType::F32, sa::DType::F64}) {
    sa::Tensor t = sa::Tensor::of(v, {5}, dt, sa::Device::cuda(0));
    sa::dist::nccl_allreduce_sum(0, t.raw(), 5, dt);
    EXPECT_EQ(t.values(), v);
  }
}

// Where NCCL is looked for: an explicit path first, then the loader's search, then pip's
// nvidia-nccl package under a Python prefix (a GPU machine's Python stack).
TEST(DataParallel, NcclIsLookedForInPipsPackageToo) {
  const std::string root = ::testing::TempDir() + "/nccl-roots";
  const std::string lib = root + "/python3.11/site-packages/nvidia/nccl/lib";
  fs::create_directories(lib);
  std::ofstream(lib + "/libnccl.so.2") << "";
  const std::vector<std::string> c = [&] {
    sa::ScopedEnv library("SA_NCCL_LIBRARY", "/opt/x/libnccl.so.2");
    return sa::dist::nccl_library_candidates({root, root + "/none"});
  }();
  ASSERT_EQ(c.size(), 4u);
  EXPECT_EQ(c[0], "/opt/x/libnccl.so.2");
  EXPECT_EQ(c[1], "libnccl.so.2");
  EXPECT_EQ(c[3], lib + "/libnccl.so.2");
  EXPECT_EQ(sa::dist::nccl_library_candidates({root}).front(), "libnccl.so.2");  // no variable: the loader first
}

// Two GPU ranks (NCCL sums the dense gradients on the devices) against one GPU with the doubled
// batch, in f32: equal to rounding.
TEST(DataParallel, TwoGpuRanksEqualOneGpuWithTheDoubledBatch) {
  if (std::string why = mpi_missing(); !why.empty()) GTEST_SKIP() << why;
  if (sa::cuda_device_count() < 2) GTEST_SKIP() << "needs 2 GPUs (NCCL takes one GPU per rank)";
  const DpRuns s = make_setup("gpu", "n_steps = 20\ndropout = 0\n");
  const auto one = run_tool(s.train("one", "--set batch_size=8 --set device=cuda:0"));
  ASSERT_EQ(one.rc, 0) << one.out;
  const auto two = run_tool(s.mpirun(2, "two", "--set batch_size=4 --set device=cuda"));
  ASSERT_EQ(two.rc, 0) << two.out;
  EXPECT_TRUE(contains(two.out, "summed on the GPUs by NCCL")) << two.out;
  const auto a = losses(s.run("one")), b = losses(s.run("two"));
  ASSERT_EQ(b.size(), a.size());
  for (auto& [step, loss] : a) EXPECT_NEAR(loss, b.at(step), 1e-4 * std::abs(loss)) << "step " << step;
}

// On a GPU the working tables gather through host memory and the shard updates run on the device:
// a sharded run on two ranks sharing the GPU (or one process without MPI) follows the replicated
// run on that GPU (f32, the same kernels on the same rows).
TEST(DataParallel, ShardedSenseTablesOnTheGpuEqualReplicated) {
  if (sa::cuda_device_count() == 0) GTEST_SKIP() << "no GPU";
  if (!fs::exists("../shared/data/corpus/brown.txt")) GTEST_SKIP() << "no ../shared/data here";
  const DpRuns s = make_setup("gpu-sharded", std::string("n_steps = 30\ndropout = 0\nbatch_size = 8\n") + kShardedSaelmo);
  const auto one = run_tool(s.train("one", "--set device=cuda:0"));
  ASSERT_EQ(one.rc, 0) << one.out;
  const bool mpi = mpi_missing().empty();
  const auto sharded = run_tool(mpi ? s.mpirun(2, "sharded", "--set batch_size=4 --set device=cuda:0 --set sense_tables=sharded")
                                    : s.train("sharded", "--set device=cuda:0 --set sense_tables=sharded"));
  ASSERT_EQ(sharded.rc, 0) << sharded.out;
  const auto a = losses(s.run("one")), b = losses(s.run("sharded"));
  ASSERT_EQ(b.size(), a.size());
  for (auto& [step, loss] : a) EXPECT_NEAR(loss, b.at(step), 1e-4 * std::abs(loss)) << "step " << step;
}

// SIGKILL of one rank ends the job (mpirun stops the other); rerunning the command resumes from
// the last checkpoint and continues exactly as an uninterrupted two-rank run. Rank 1 is killed
// once the run has passed step 25; rank 0, which alone writes the run directory, in the middle of
// its sixth rename (the second checkpoint's weights.hdf5).
TEST(DataParallel, KilledRankThenRerunEqualsUninterruptedRun) {
  if (std::string why = mpi_missing(); !why.empty()) GTEST_SKIP() << why;
  const DpRuns s = make_setup("kill", "n_steps = 100\nbatch_size = 4\nn_context = 3\ncluster_proj_dim = 4\n"
                                      "pca_sample = 500\npca_every = 7\ncontextual_warmup = 15\nstate_reset = 0.2\n");
  const auto straight = run_tool(s.mpirun(2, "straight"));
  ASSERT_EQ(straight.rc, 0) << straight.out;
  const auto want = losses(s.run("straight"));
  ASSERT_EQ(want.size(), 100u);
  auto rerun_equals_straight = [&](const std::string& run) {
    const int64_t reached = last_step(s.run(run));
    ASSERT_LT(reached, 100);
    const auto rerun = run_tool(s.mpirun(2, run));
    ASSERT_EQ(rerun.rc, 0) << rerun.out;
    EXPECT_TRUE(contains(rerun.out, "resuming")) << rerun.out;
    const auto got = losses(s.run(run));
    ASSERT_EQ(got.size(), 100u) << "every step logged once after the resume (killed at step " << reached << ")";
    for (auto& [step, loss] : want) EXPECT_EQ(loss, got.at(step)) << "step " << step;
    expect_checkpoints_near(s.run("straight"), s.run(run), 0.0);
  };
  {
    SCOPED_TRACE("rank 1 killed");
    const pid_t launcher = fork();
    if (launcher == 0) {
      const std::string cmd = "exec env " + s.mpirun(2, "rank1") + " < /dev/null > /dev/null 2>&1";  // env execs mpirun
      execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    int status = 0;
    for (int i = 0; i < 60000 && last_step(s.run("rank1")) < 25; ++i) {
      ASSERT_EQ(waitpid(launcher, &status, WNOHANG), 0) << "mpirun ended before step 25";
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    const pid_t victim = rank_pid(launcher, 1);
    ASSERT_GT(victim, 0) << "rank 1 not found among mpirun's children";
    kill(victim, SIGKILL);
    waitpid(launcher, &status, 0);
    ASSERT_FALSE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the job finished before rank 1 could be killed";
    rerun_equals_straight("rank1");
  }
  {
    SCOPED_TRACE("rank 0 killed at a rename");
    const std::string shim = "-x LD_PRELOAD=" + fs::absolute("bin/fault_inject.so").string() + " -x FAULT_KILL_AT_RENAME=6 ";
    const auto killed = run_tool(std::string(kMpiEnv) + " mpirun " + kMpiArgs + " " + shim + "-np 2 " + s.train("rank0"));
    ASSERT_NE(killed.rc, 0) << killed.out;
    rerun_equals_straight("rank0");
  }
  // Resuming with another number of ranks would continue a different run: refused, with the count,
  // by one process and by three ranks (rank 0 fails; the job ends instead of waiting for it).
  const auto one = run_tool(s.train("rank0", "--set n_steps=110"));
  EXPECT_NE(one.rc, 0);
  EXPECT_TRUE(contains(one.out, "2 data-parallel ranks; resume it with mpirun -np 2")) << one.out;
  const auto three = run_tool("timeout 120 env " + s.mpirun(3, "rank0", "--set n_steps=110"));
  EXPECT_NE(three.rc, 0);
  EXPECT_NE(three.rc, 124) << "the job hung after rank 0 failed";
  EXPECT_TRUE(contains(three.out, "(this run has 3)")) << three.out;
}

}  // namespace
