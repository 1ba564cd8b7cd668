// The training loop every family shares (train/train_loop.h), driven by a toy family: the cadence
// of loss lines, held-out scores and checkpoints, a stop after max_new_steps, the family's own
// metric keys; and the registry of families (train/families.h).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "data/run_files.h"
#include "data/safetensors.h"
#include "engine/engine.h"
#include "engine/replay_audit.h"
#include "tests/run_metrics.h"
#include "tests/test_util.h"
#include "train/families.h"
#include "train/periodic_work.h"
#include "train/train_loop.h"

namespace sa {
namespace {

namespace fs = std::filesystem;

// Loss 1/step, 10 tokens a step; records when it was asked to score and to save.
class ToyFamily final : public ModelFamily {
 public:
  ToyFamily(int64_t step, int64_t total) : step_(step), total_(total) {}
  int64_t step() const override { return step_; }
  int64_t total_steps() const override { return total_; }
  Device device() const override { return Device::cpu(); }
  StepStats train_step(StepPhases& phases) override {
    ++step_;
    phases.mark("work");
    return {Tensor::full({1}, 1.0 / static_cast<double>(step_), DType::F64), 10, 3, 2.5};
  }
  nlohmann::json step_metrics() const override { return {{"toy_key", step_ * 2}}; }
  bool scores_heldout() const override { return true; }
  double heldout_perplexity() override {
    scored.push_back(step_);
    return 100.0 + static_cast<double>(step_);
  }
  void save() override { saved.push_back(step_); }
  std::vector<int64_t> scored, saved;

 private:
  int64_t step_, total_;
};

std::vector<nlohmann::json> metric_lines(const std::string& dir) {
  std::vector<nlohmann::json> v;
  std::ifstream in(run_files::metrics(dir));
  for (std::string line; std::getline(in, line);) v.push_back(nlohmann::json::parse(line));
  return v;
}

struct LoopRun {
  std::string dir;
  TrainConfig c;
};
LoopRun toy_config(const std::string& name) {
  LoopRun r{::testing::TempDir() + "/loop-" + name, TrainConfig()};
  fs::remove_all(r.dir);
  r.c.run_dir = r.dir;
  r.c.log_every = 4;
  r.c.heldout_every = 5;
  r.c.checkpoint_every = 6;
  return r;
}

TEST(TrainLoop, LogsScoresAndSavesOnTheirStepsAndOnceAtTheEnd) {
  LoopRun r = toy_config("cadence");
  TrainConfig resolved;
  RunSession session(r.c, resolved);
  session.open_metrics(0);
  ToyFamily f(0, 13);
  StepPhases phases(false, Device::cpu());
  const TrainResult res = run_training(f, r.c, RunOutput{&session, true}, TrainOptions{}, phases);
  EXPECT_EQ(res.steps_done, 13);
  EXPECT_DOUBLE_EQ(res.last_loss, 1.0 / 13);
  EXPECT_EQ(f.scored, (std::vector<int64_t>{5, 10, 13}));
  EXPECT_EQ(f.saved, (std::vector<int64_t>{6, 12, 13}));
  EXPECT_DOUBLE_EQ(res.heldout_perplexity, 113);
  // 13 steps, the first 5 not timed as steady: 8 steps of 3 encoded tokens and 2.5 softmax rows.
  EXPECT_EQ(res.encoded_tokens, 24);
  EXPECT_DOUBLE_EQ(res.softmax_rows, 20);
  EXPECT_GT(res.tokens_per_s, 0);
  std::vector<int64_t> loss_steps, heldout_steps;
  for (const nlohmann::json& j : metric_lines(r.dir)) {
    if (j.contains("loss")) {
      loss_steps.push_back(j["step"]);
      EXPECT_EQ(j["toy_key"], 2 * j["step"].get<int64_t>());  // the family's keys join the loss line
      EXPECT_DOUBLE_EQ(j["loss"], 1.0 / j["step"].get<double>());
    }
    if (j.contains("heldout_perplexity")) heldout_steps.push_back(j["step"]);
  }
  EXPECT_EQ(loss_steps, (std::vector<int64_t>{4, 8, 12, 13}));
  EXPECT_EQ(heldout_steps, (std::vector<int64_t>{5, 10, 13}));
}

// Each checkpoint step logs the tokens seen so far, so a resume from it continues the count
// exactly even when checkpoints fall between logging steps (here 6 and 12 against 4 and 8).
TEST(TrainLoop, AResumeContinuesTheTokenCountOfItsCheckpoint) {
  LoopRun r = toy_config("tokens");
  StepPhases phases(false, Device::cpu());
  {
    TrainConfig resolved;
    RunSession session(r.c, resolved);
    session.open_metrics(0);
    ToyFamily f(0, 13);
    TrainOptions o;
    o.max_new_steps = 7;  // stops at step 7: the newest checkpoint is step 6's
    run_training(f, r.c, RunOutput{&session, true}, o, phases);
  }
  TrainConfig resolved;
  RunSession session(r.c, resolved);
  session.open_metrics(6);  // what resuming from step 6's checkpoint does
  EXPECT_EQ(session.tokens_before(), 60);
  ToyFamily f(6, 13);
  run_training(f, r.c, RunOutput{&session, true}, TrainOptions{}, phases);
  std::map<int64_t, int64_t> tokens;
  for (const nlohmann::json& j : metric_lines(r.dir))
    if (j.contains("loss")) tokens[j["step"].get<int64_t>()] = j["tokens"].get<int64_t>();
  EXPECT_EQ(tokens, (std::map<int64_t, int64_t>{{4, 40}, {8, 80}, {12, 120}, {13, 130}}));
}

TEST(TrainLoop, StopsAfterMaxNewStepsAndAFinishedRunDoesNothing) {
  LoopRun r = toy_config("stop");
  StepPhases phases(false, Device::cpu());
  ToyFamily f(7, 13);  // resumed at step 7
  TrainOptions o;
  o.max_new_steps = 3;
  EXPECT_EQ(run_training(f, r.c, RunOutput{nullptr, true}, o, phases).steps_done, 10);
  EXPECT_EQ(f.saved, std::vector<int64_t>{});  // no step of 8..10 is a checkpoint step
  EXPECT_EQ(f.scored, std::vector<int64_t>{10});
  ToyFamily done(13, 13);
  const TrainResult res = run_training(done, r.c, RunOutput{nullptr, true}, TrainOptions{}, phases);
  EXPECT_EQ(res.steps_done, 13);
  EXPECT_TRUE(done.scored.empty());
  EXPECT_TRUE(done.saved.empty());
}

TEST(TrainLoop, PhasesAreTimedAfterTheWarmUpSteps) {
  LoopRun r = toy_config("phases");
  StepPhases phases(true, Device::cpu());
  ToyFamily f(0, 8);
  const TrainResult res = run_training(f, r.c, RunOutput{nullptr, true}, TrainOptions{}, phases);
  ASSERT_EQ(res.phase_seconds.size(), 1u);
  EXPECT_EQ(res.phase_seconds[0].first, "work");
}

// A tiny ELMo's config in a fresh directory `name`, its run under name/run.
std::string tiny_elmo_config(const std::string& name, int64_t n_steps, const std::string& extra = "") {
  const std::string dir = ::testing::TempDir() + "/" + name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  {
    std::ofstream corpus(dir + "/corpus.txt");
    for (int i = 0; i < 40; ++i) corpus << (i % 2 ? "the cat sat on the mat .\n" : "a dog ran to the park and back .\n");
  }
  std::ofstream(dir + "/tiny.cfg") << "train_prefix = \"" << dir << "/corpus.txt\"\nrun_dir = \"" << dir << "/run\"\n"
                                   << "batch_size = 2\nunroll_steps = 4\nn_negative_samples_batch = 4\nn_steps = " << n_steps
                                   << "\nlog_every = 1000\ndevice = \"cpu\"\n" << extra
                                   << "[char_cnn]\nembedding.dim = 4\nfilters = [[1, 4], [2, 4]]\nn_highway = 1\n"
                                   << "[lstm]\ndim = 8\nprojection_dim = 4\nn_layers = 1\n";
  return dir + "/tiny.cfg";
}

// A tiny ELMo with its phases timed (bench train --phases): the forward and the loss split by op
// as the backward is, each op's share inside the phases that ran it.
TEST(TrainLoop, PhasesSplitTheForwardAndTheBackwardByOp) {
  TrainOptions o;
  o.quiet = true;
  o.time_phases = true;
  const TrainResult r = train_model(TrainConfig::load(tiny_elmo_config("phases-by-op", 9, "checkpoint_every = 1000\n")), o);
  auto has = [](const std::vector<std::pair<std::string, double>>& ops, const std::string& op) {
    for (const auto& [name, s] : ops)
      if (name == op) return true;
    return false;
  };
  EXPECT_TRUE(has(r.forward_op_seconds, "lstm_sequence"));
  EXPECT_TRUE(has(r.forward_op_seconds, "candidate_softmax"));  // the loss's ops too
  EXPECT_TRUE(has(r.backward_op_seconds, "lstm_sequence"));
  double ops = 0, phases = 0;
  for (const auto& [name, s] : r.forward_op_seconds) {
    EXPECT_GE(s, 0) << name;
    ops += s;
  }
  for (const auto& [name, s] : r.phase_seconds)
    if (name == "forward" || name == "loss") phases += s;
  EXPECT_GT(ops, 0);
  EXPECT_LE(ops, phases);
}

// As bench train --no-arithmetic: a first real step sets everything up, then no arithmetic; back on
// when the test ends, whatever it asserted.
void arithmetic_off_after_step_1(int64_t step) {
  if (step == 1) set_cpu_arithmetic(false);
}
struct ArithmeticBack {
  ~ArithmeticBack() { set_cpu_arithmetic(true); }
};

// bench train --no-arithmetic: after a first step, the CPU's primitives compute nothing, so no
// weight moves, while each step takes the host path it takes with arithmetic: the same launches,
// uploads and host reads.
TEST(TrainLoop, WithoutArithmeticAStepTakesTheSameHostPathAndMovesNoWeight) {
  TrainOptions o;
  o.quiet = true;
  const TrainResult real = train_model(TrainConfig::load(tiny_elmo_config("with-arithmetic", 9, "checkpoint_every = 7\n")), o);
  const std::string cfg = tiny_elmo_config("no-arithmetic", 9, "checkpoint_every = 7\n");
  const ArithmeticBack back;
  o.after_step = arithmetic_off_after_step_1;
  const TrainResult dry = train_model(TrainConfig::load(cfg), o);
  EXPECT_FALSE(cpu_arithmetic());
  set_cpu_arithmetic(true);
  ASSERT_EQ(dry.steady_steps, real.steady_steps);
  ASSERT_GT(real.steady_counters.launches, 0);
  EXPECT_EQ(dry.steady_counters.launches, real.steady_counters.launches);
  EXPECT_EQ(dry.steady_counters.uploads, real.steady_counters.uploads);
  EXPECT_EQ(dry.steady_counters.host_reads, real.steady_counters.host_reads);
  const std::string ckpts = fs::path(cfg).parent_path().string() + "/run/checkpoints/";
  const SafetensorsFile at7 = load_safetensors(ckpts + "ckpt-00000007.safetensors");
  const SafetensorsFile at9 = load_safetensors(ckpts + "ckpt-00000009.safetensors");
  ASSERT_FALSE(at7.tensors.empty());
  int compared = 0;
  for (const auto& [name, t] : at7.tensors)
    if (!name.starts_with("state/")) {  // the LSTMs' carried state: each step's new output tensors
      EXPECT_EQ(t.values(), at9.tensors.at(name).values()) << name;
      ++compared;
    }
  EXPECT_GT(compared, 10);
  // And arithmetic is back: a product computes again.
  const Tensor x = Tensor::full({2, 2}, 1.5, DType::F32);
  EXPECT_EQ(ops::matmul(x, x).values(), (std::vector<double>{4.5, 4.5, 4.5, 4.5}));
}

// SaELMo without arithmetic past its warm-up, through refits, pruning and the usage windows the
// host reads on logging steps: the ids it reads are still made, so it runs to the end.
TEST(TrainLoop, WithoutArithmeticASenseModelRunsThroughItsSchedule) {
  TrainOptions o;
  o.quiet = true;
  const ArithmeticBack back;
  o.after_step = arithmetic_off_after_step_1;
  const std::string cfg = tiny_elmo_config(
      "no-arithmetic-senses", 16,
      "checkpoint_every = 8\nn_context = 3\ncluster_proj_dim = 2\npca_sample = 40\npca_every = 3\n"
      "contextual_warmup = 2\nprune_first = 6\nprune_every = 3\ncontext_record_window = 4\nwarmup_init = \"random\"\n"
      "sense_negatives = \"log_uniform\"\n");  // as saelmo.cfg: the selections made on the device
  const TrainResult dry = train_model(TrainConfig::load(cfg), o);
  EXPECT_EQ(dry.steps_done, 16);
  // The host read real ids: each target's first candidate reached its own word's usage window (a
  // window holds the word's rows, word x 3 senses). Unwritten (zeroed) ids would all be word 0's.
  const SafetensorsFile at16 =
      load_safetensors(fs::path(cfg).parent_path().string() + "/run/checkpoints/ckpt-00000016.safetensors");
  int heads = 0;
  for (const auto& [name, t] : at16.tensors) {
    if (!name.ends_with("usage")) continue;
    ++heads;
    const int64_t V = t.dim(0), W = t.dim(1);
    const std::vector<double> v = t.values();
    int words = 0;
    for (int64_t r = 0; r < V; ++r) {
      bool any = false;
      for (int64_t k = 0; k < W; ++k) {
        EXPECT_TRUE(v[r * W + k] == -1 || static_cast<int64_t>(v[r * W + k]) / 3 == r) << name << " word " << r;
        any = any || v[r * W + k] >= 0;
      }
      words += any;
    }
    EXPECT_GT(words, 3) << name;
  }
  EXPECT_EQ(heads, 2);
}

// SaELMo's log-uniform words, drawn on the read-ahead thread, are taken at every step but the one
// after the warm-up's end: its words were drawn while one sense a word kept the cap away, and two
// senses a word take fewer words under sense_negative_rows_max.
TEST(TrainLoop, SenseWordsDrawnAheadAreTakenWhereTheCountHolds) {
  TrainOptions o;
  o.quiet = true;
  TrainConfig c = TrainConfig::load(tiny_elmo_config(
      "sense-words-ahead", 8,
      "checkpoint_every = 1000\nn_context = 3\ncluster_proj_dim = 2\npca_sample = 40\ncontextual_warmup = 3\n"
      "sense_negatives = \"log_uniform\"\nsense_negative_budget = \"words\"\nsense_negative_rows_max = 6\n"));
  c.log_every = 1;
  train_model(c, o);
  const auto taken = testing::metric(c.run_dir, "negatives_drawn_ahead");
  const auto words = testing::metric(c.run_dir, "negative_words");
  ASSERT_EQ(taken.size(), 8u);
  for (const auto& [step, share] : taken) EXPECT_EQ(share, step == 4 ? 0.0 : 1.0) << "step " << step;
  EXPECT_EQ(words.at(3), 4);  // 4 words of one sense each
  EXPECT_EQ(words.at(4), 3);  // 6 rows / 2 senses a word
}

// The replay audit over ELMo steps without arithmetic (the GPU's shapes: coalesced rows come
// padded, as CUDA returns them): the char-CNN's distinct tokens change its shapes from step to
// step; padded to one count (char_tokens_bucket), only buffers and the dropout seeds change, and
// without dropout only buffers. Padding changes no result.
ReplayAudit audit_tiny_elmo(const std::string& name, const std::string& extra) {
  TrainOptions o;
  o.quiet = true;
  const ArithmeticBack back;
  o.after_step = arithmetic_off_after_step_1;
  replay_audit::start();
  train_model(TrainConfig::load(tiny_elmo_config(name, 10, "checkpoint_every = 1000\n" + extra)), o);
  const ReplayAudit a = replay_audit::totals();
  replay_audit::stop();
  return a;
}

TEST(TrainLoop, PaddedCharTokensLeaveOnlyBuffersAndDropoutSeedsToChange) {
  const ReplayAudit plain = audit_tiny_elmo("audit-plain", "");
  EXPECT_EQ(plain.steps, 5);  // the 5 timed steps after warm-up, each against the one before
  EXPECT_EQ(plain.order, 0);
  EXPECT_GT(plain.shapes_by.count("conv1d_max"), 0u) << replay_audit::summary(plain);
  const ReplayAudit padded = audit_tiny_elmo("audit-padded", "char_tokens_bucket = 16\n");  // 2 x 2 rows x 4 steps
  EXPECT_EQ(padded.launches, plain.launches);
  EXPECT_EQ(padded.order + padded.shapes, 0) << replay_audit::summary(padded);
  EXPECT_EQ(padded.values_by, (std::map<std::string, int64_t>{{"dropout_mask", padded.values}}));
  EXPECT_GT(padded.values, 0);
  const ReplayAudit no_dropout = audit_tiny_elmo("audit-no-dropout", "char_tokens_bucket = 16\ndropout = 0\n");
  EXPECT_EQ(no_dropout.order + no_dropout.shapes + no_dropout.values, 0) << replay_audit::summary(no_dropout);
  EXPECT_EQ(no_dropout.same + no_dropout.buffers, no_dropout.launches);

  TrainOptions o;
  o.quiet = true;
  const TrainResult a = train_model(TrainConfig::load(tiny_elmo_config("pad-off", 6, "checkpoint_every = 1000\n")), o);
  const TrainResult b = train_model(
      TrainConfig::load(tiny_elmo_config("pad-on", 6, "checkpoint_every = 1000\nchar_tokens_bucket = 5\n")), o);
  EXPECT_NEAR(b.last_loss, a.last_loss, 1e-6 * std::abs(a.last_loss));
  EXPECT_GT(b.encoded_tokens, a.encoded_tokens);  // the padding rows were encoded
}

// SA_STEP_REPLAY=1 (engine/step_replay.h): a run's second step is captured and later steps replay
// it on the CPU, through dropout, state resets and sampled negatives, and the run is the launched
// run byte for byte. With the distinct tokens padded to a smaller bucket, steps whose inputs have
// other sizes run launched between replays (the next replay starts from their state), and the run
// is still the launched one. A sense model is not captured, and says why.
std::string file_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

TEST(TrainLoop, ReplayedStepsTrainAsLaunchedOnes) {
  TrainOptions o;
  o.quiet = true;
  auto run = [&](const std::string& name, const char* replay, const std::string& extra) {
    const testing::ScopedEnv env("SA_STEP_REPLAY", replay);
    const std::string cfg = tiny_elmo_config(name, 14, "checkpoint_every = 14\nstate_reset = 0.3\n" + extra);
    const TrainResult r = train_model(TrainConfig::load(cfg, {"log_every=1"}), o);  // a loss each step
    const std::string dir = fs::path(cfg).parent_path().string() + "/run";
    return std::tuple{r, file_bytes(dir + "/checkpoints/ckpt-00000014.safetensors"), testing::metric(dir, "loss")};
  };
  const auto [launched, launched_ckpt, launched_losses] = run("replay-off", nullptr, "char_tokens_bucket = 16\n");
  EXPECT_EQ(launched.replay, "");
  EXPECT_EQ(launched_losses.size(), 14u);
  const auto [replayed, replayed_ckpt, replayed_losses] = run("replay-on", "1", "char_tokens_bucket = 16\n");
  EXPECT_TRUE(testing::contains(replayed.replay, "12 steps replayed the step captured at step 2")) << replayed.replay;
  EXPECT_EQ(replayed_losses, launched_losses);
  EXPECT_FALSE(launched_ckpt.empty());
  EXPECT_TRUE(replayed_ckpt == launched_ckpt);

  const auto [bucket_off, bucket_off_ckpt, l1] = run("replay-bucket-off", nullptr, "char_tokens_bucket = 2\n");
  const auto [bucket_on, bucket_on_ckpt, l2] = run("replay-bucket-on", "1", "char_tokens_bucket = 2\n");
  EXPECT_TRUE(testing::contains(bucket_on.replay, "the others' inputs had other sizes")) << bucket_on.replay;
  EXPECT_FALSE(testing::contains(bucket_on.replay, " 0 steps replayed")) << bucket_on.replay;
  EXPECT_EQ(l2, l1);
  EXPECT_TRUE(bucket_on_ckpt == bucket_off_ckpt);

  const auto [sense, sense_ckpt, l3] =
      run("replay-senses", "1", "n_context = 3\ncluster_proj_dim = 2\npca_sample = 40\ncontextual_warmup = 2\n");
  EXPECT_TRUE(testing::contains(sense.replay, "no step captured: a sense model")) << sense.replay;
  EXPECT_EQ(sense.steps_done, 14);
}

// On a GPU the captured step is one CUDA graph, replayed with each step's inputs copied into its
// pinned slots: 50 steps train as launched ones, the loss of each within 1e-5 (the kernels are
// the same; atomics in the sparse gradients may add in another order).
TEST(TrainLoop, OnCudaReplayedStepsTrainAsLaunchedOnes) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no GPU present: CUDA step replay not compared";
  TrainOptions o;
  o.quiet = true;
  auto run = [&](const std::string& name, const char* replay) {
    const testing::ScopedEnv env("SA_STEP_REPLAY", replay);
    const std::string cfg = tiny_elmo_config(name, 50, "checkpoint_every = 50\nstate_reset = 0.3\nchar_tokens_bucket = 16\n");
    const TrainResult r = train_model(TrainConfig::load(cfg, {"log_every=1", "device=\"cuda:0\""}), o);
    return std::pair{r, testing::metric(fs::path(cfg).parent_path().string() + "/run", "loss")};
  };
  const auto [launched, launched_losses] = run("cuda-replay-off", nullptr);
  const auto [replayed, replayed_losses] = run("cuda-replay-on", "1");
  EXPECT_TRUE(testing::contains(replayed.replay, "48 steps replayed the step captured at step 2")) << replayed.replay;
  ASSERT_EQ(launched_losses.size(), 50u);
  ASSERT_EQ(replayed_losses.size(), 50u);
  for (const auto& [step, loss] : launched_losses) EXPECT_NEAR(replayed_losses.at(step), loss, 1e-5) << "step " << step;
}

// bench train says which of a sense model's periodic host work its timed steps held: refits on step
// 1 and every pca_every after, flushes on logging steps, prunings from prune_first on.
TEST(TrainLoop, PeriodicSenseWorkCountsTheStepsItFallsOn) {
  TrainConfig c;
  c.sense.n_context = 6, c.sense.pca_every = 250, c.log_every = 100;
  c.sense.prune_every = 50, c.sense.prune_first = 100;
  PeriodicWork w = periodic_work(c, 6, 25);  // bench train's 20 timed steps
  EXPECT_EQ(w.refits + w.flushes + w.prunings, 0);
  EXPECT_TRUE(testing::contains(periodic_work_line(c, 6, 25), "time more steps"));
  w = periodic_work(c, 6, 605);
  EXPECT_EQ(w.refits, 2);     // 251, 501
  EXPECT_EQ(w.flushes, 6);    // 100, ..., 600
  EXPECT_EQ(w.prunings, 11);  // 100, 150, ..., 600
  EXPECT_FALSE(testing::contains(periodic_work_line(c, 6, 605), "time more steps"));
  EXPECT_EQ(periodic_work(c, 1, 1).refits, 1);
  EXPECT_EQ(periodic_work(c, 251, 251).refits, 1);
  EXPECT_EQ(periodic_work(c, 252, 500).refits, 0);
  c.sense.n_context = 1;  // no senses: nothing periodic
  EXPECT_EQ(periodic_work(c, 1, 1000).refits, 0);
  EXPECT_EQ(periodic_work_line(c, 1, 1000), "");
}

TEST(ModelFamilies, TheRegistryNamesEachFamilyOnce) {
  std::vector<std::string> names;
  for (const ModelFamilyInfo& f : model_families()) {
    names.push_back(f.model);
    EXPECT_TRUE(f.make && f.export_run && f.batch_shape) << f.model;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"elmo", "bert"}));
  EXPECT_EQ(std::string(model_family("bert").model), "bert");
  try {
    model_family("gpt");
    FAIL() << "an unknown family was accepted";
  } catch (const Error& e) {
    EXPECT_TRUE(testing::contains(e.what(), "\"elmo\" or \"bert\", got \"gpt\"")) << e.what();
  }
}

TEST(ModelFamilies, EachFamilyChecksItsOwnKeysWithTheLine) {
  const std::string corpus = testing::temp_file("loop-corpus.txt", "a b c\n");
  const std::string cfg = testing::temp_file("loop-family.cfg", "train_prefix = \"" + corpus + "\"\nrun_dir = \"x\"\n"
                                             "model = \"bert\"\n[bert]\nhidden = 30\nheads = 4\n");
  try {
    TrainConfig::load(cfg);
    FAIL() << "hidden 30 with 4 heads was accepted";
  } catch (const Error& e) {
    EXPECT_TRUE(testing::contains(e.what(), "loop-family.cfg:5: bert.hidden (30) must be a multiple of bert.heads (4)"))
        << e.what();
  }
  // ELMo's [lstm] keys are ELMo's: a BERT config never reads them.
  EXPECT_NO_THROW(TrainConfig::load(cfg, {"bert.hidden=32", "lstm.cudnn=maybe"}));
  try {
    TrainConfig::load(cfg, {"model=elmo", "lstm.cudnn=maybe"});
    FAIL() << "lstm.cudnn = maybe was accepted";
  } catch (const Error& e) {
    EXPECT_TRUE(testing::contains(e.what(), "--set lstm.cudnn=maybe: lstm.cudnn must be")) << e.what();
  }
}

}  // namespace
}  // namespace sa
