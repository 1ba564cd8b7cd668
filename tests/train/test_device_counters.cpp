// The counters of host reads, uploads and launches (engine/core/device_counters.h), and the budget
// of one training step on the CPU backend: the places where a GPU step would wait for the host.
// The same counters run on CUDA (bin/bench train prints them per step).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <tuple>

#include "engine/engine.h"
#include "tests/test_util.h"
#include "train/families.h"

namespace sa {
namespace {

namespace fs = std::filesystem;

TEST(DeviceCounters, CountReadsUploadsAndLaunches) {
  const DeviceCounters before = device_counters();
  Tensor a = Tensor::from(std::vector<float>{1, 2, 3}, {3});  // one upload
  Tensor b = Tensor::empty({3}, DType::F32);                  // an allocation starts nothing
  EXPECT_EQ((device_counters() - before).launches, 0);
  Tensor c = ops::add(a, a);                                  // one primitive at least
  const double s = ops::sum(c).item();                        // one read
  EXPECT_DOUBLE_EQ(s, 12);
  const DeviceCounters d = device_counters() - before;
  EXPECT_EQ(d.uploads, 1);
  EXPECT_EQ(d.host_reads, 1);
  EXPECT_GE(d.launches, 2);
  EXPECT_EQ(d.kernels, 0);  // no CUDA kernel on the CPU
}

// The host's time blocked on a GPU: queued work costs none until the host reads a result, which
// waits for it; the CPU never waits (it is the device).
TEST(DeviceCounters, TheHostsWaitForAGpuIsCountedAtReadsOnly) {
  for (Device d : testing::cpu_and_gpu("the host's wait")) {
    const int64_t n = d.is_cuda() ? 2048 : 128;  // the CPU's figure is zero at any size
    const Tensor a = Tensor::full({n, n}, 1e-3, DType::F32, d);
    ops::sum(ops::matmul(a, a)).item();  // warm-up: the GEMM's handle and workspace
    const DeviceCounters before = device_counters();
    Tensor c = a;
    for (int i = 0; i < 20; ++i) c = ops::matmul(c, a);  // on a GPU ~0.3 TFLOP queued: milliseconds
    const int64_t queued = (device_counters() - before).wait_ns;
    const double v = ops::sum(c).item();
    const int64_t read = (device_counters() - before).wait_ns;
    EXPECT_TRUE(std::isfinite(v));
    EXPECT_EQ(queued, 0) << d.str() << ": launching waits for nothing";
    if (d.is_cuda())
      EXPECT_GT(read, 0) << "the read waited for the queued products";
    else
      EXPECT_EQ(read, 0) << "the CPU never waits for a device";
  }
}

// Trains a tiny ELMo or SaELMo for 12 steps with no logging, held-out or checkpoint step after the
// warm-up; returns the counts per step of the last 7.
DeviceCounters per_step(const std::string& name, const std::string& extra, const std::string& device = "cpu",
                        std::string* why = nullptr, int unroll = 6, double* softmax_rows = nullptr,
                        double* loss = nullptr) {
  const std::string dir = ::testing::TempDir() + "/counters-" + name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  {
    std::ofstream corpus(dir + "/corpus.txt");
    const char* lines[] = {"the cat sat on the mat .", "a dog ran to the park and back .",
                           "the bank of the river is green .", "she went to the bank to get money ."};
    for (int i = 0; i < 80; ++i) corpus << lines[i % 4] << "\n";
  }
  std::ofstream(dir + "/tiny.cfg") << "train_prefix = \"" << dir << "/corpus.txt\"\nrun_dir = \"" << dir << "/run\"\n"
                                   << "batch_size = 4\nunroll_steps = " << unroll << "\nn_negative_samples_batch = 8\n"
                                   << "n_steps = 12\nlog_every = 1000\ncheckpoint_every = 1000\nseed = 3\n"
                                   << "device = \"" << device << "\"\n" << extra
                                   << "[char_cnn]\nembedding.dim = 4\nfilters = [[1, 8], [2, 8]]\nn_highway = 1\n"
                                   << "[lstm]\ndim = 16\nprojection_dim = 8\nn_layers = 2\n";
  TrainOptions o;
  o.quiet = true;
  o.max_new_steps = 11;  // step 12 (the last) would log, score and save
  const TrainResult r = train_model(TrainConfig::load(dir + "/tiny.cfg"), o);
  EXPECT_EQ(r.steady_steps, 6);
  if (loss) *loss = r.last_loss;
  if (why) *why = r.host_reads_why;
  if (softmax_rows) *softmax_rows = r.softmax_rows / static_cast<double>(r.steady_steps);
  DeviceCounters k = r.steady_counters;
  k.host_reads /= r.steady_steps, k.uploads /= r.steady_steps, k.launches /= r.steady_steps;
  k.graphs /= r.steady_steps, k.in_graphs /= r.steady_steps, k.graph_breaks /= r.steady_steps;
  return k;
}

// The same training's loss at its last step (and its counts per step).
double per_step_loss(const std::string& name, const std::string& extra, const std::string& device,
                     DeviceCounters* k = nullptr) {
  double loss = 0;
  const DeviceCounters c = per_step(name, extra, device, nullptr, 6, nullptr, &loss);
  if (k) *k = c;
  return loss;
}

// Budgets measured when these counters came in. A change that adds host reads, uploads or launches
// to the step fails here; one that removes some lowers the budget.
// The loss is read on logging steps only and the clip stays on the device: between logging steps
// an ELMo step never waits for the host.
TEST(DeviceCounters, AnElmoStepNeverReadsBetweenLoggingSteps) {
  std::string why;
  double rows = 0;
  const DeviceCounters k = per_step("elmo", "", "cpu", &why, 6, &rows);
  EXPECT_DOUBLE_EQ(rows, 8);  // the softmax's candidates a direction, which bench train's FLOP count takes
  EXPECT_EQ(k.host_reads, 0);
  EXPECT_EQ(why, "");  // bench train says why only where reads remain
  EXPECT_LE(k.uploads, 16);     // the batch's char ids and targets, the sampled negatives
  // 390 since every primitive of the LSTM's step loops counts (they had shared one backend lookup
  // per sequence, which the counter counts: 270 then, 364 before the multi-tensor clip and Adagrad);
  // 366 since the output's gradient is one kernel per step (it was an axpy and the clip's backward)
  EXPECT_LE(k.launches, 366);
}

// Under precision = "bf16" the LSTM's step kernels write the bf16 operands of the step GEMMs, so
// its steps launch nothing more than f32's; what remains are the roundings done once per sequence
// (its weights, and the operands of its whole-sequence GEMMs) and the other layers' (the char CNN,
// the highway layer, the softmax): 86 in this model, whatever the number of steps (98 before the
// char CNN's operands were rounded by one kernel each instead of a cast there and back).
TEST(DeviceCounters, UnderBf16AnElmoStepAddsNoLaunchPerLstmStep) {
  const DeviceCounters f32 = per_step("elmo-f32", ""), bf16 = per_step("elmo-bf16", "precision = \"bf16\"\n");
  EXPECT_EQ(bf16.host_reads, 0);
  EXPECT_LE(bf16.launches - f32.launches, 86) << bf16.launches << " against " << f32.launches;
  // The same run with twice the steps per batch: the extra launches do not grow with the steps.
  const DeviceCounters f32_long = per_step("elmo-f32-long", "", "cpu", nullptr, 12),
                       bf16_long = per_step("elmo-bf16-long", "precision = \"bf16\"\n", "cpu", nullptr, 12);
  EXPECT_EQ(bf16_long.launches - f32_long.launches, bf16.launches - f32.launches);
}

// With the LSTM's step loops recorded as graphs (SA_CUDA_GRAPHS=1), what a GPU starts per step no
// longer grows with the steps per batch: each of the 4 sequences (2 layers, 2 directions) is one
// graph forward and one backward, and none of them reads or uploads.
TEST(DeviceCounters, WithGraphsAnElmoStepStartsAsManyGpuLaunchesAtAnyUnroll) {
  testing::ScopedEnv graphs("SA_CUDA_GRAPHS", "1");
  const DeviceCounters k6 = per_step("elmo-graphs", ""), k12 = per_step("elmo-graphs-long", "", "cpu", nullptr, 12);
  for (const DeviceCounters& k : {k6, k12}) {
    EXPECT_EQ(k.graphs, 8);
    EXPECT_EQ(k.graph_breaks, 0);
    EXPECT_EQ(k.host_reads, 0);
  }
  EXPECT_GT(k12.launches, k6.launches) << "launch by launch, twice the steps launch more";
  EXPECT_EQ(k12.gpu_launches(), k6.gpu_launches());
  EXPECT_LE(k6.gpu_launches(), 154) << k6.launches << " launches, " << k6.in_graphs << " of them in graphs";
}

// With SA_CUDA_GRAPHS=step the whole step is recorded, in pieces that end where the host meets
// the device: every launch of a steady step lands in a piece, a GPU starts only the pieces, and
// there are no more of them than the step's uploads and reads, plus one.
TEST(DeviceCounters, WithStepGraphsAStepStartsOnlyItsPieces) {
  testing::ScopedEnv graphs("SA_CUDA_GRAPHS", "step");
  const std::string saelmo = "n_context = 3\ncontextual_warmup = 2\ncluster_proj_dim = 4\npca_sample = 40\n"
                             "pca_every = 20\nsense_negatives = \"log_uniform\"\n";
  for (const auto& [name, extra, most] :
       {std::tuple{"elmo-step-graphs", std::string(), 16}, std::tuple{"saelmo-step-graphs", saelmo, 28}}) {
    SCOPED_TRACE(name);
    const DeviceCounters k = per_step(name, extra);
    EXPECT_EQ(k.host_reads, 0);
    EXPECT_EQ(k.graph_breaks, 0);
    EXPECT_EQ(k.in_graphs, k.launches) << "a launch outside the step's pieces (a GPU starts only the pieces)";
    EXPECT_LE(k.graphs, k.uploads + k.host_reads + 1);
    EXPECT_LE(k.graphs, most) << k.launches << " launches in " << k.graphs << " pieces, " << k.uploads << " uploads";
  }
}

// On CUDA too: the loss, the clip and the sparse gradients' coalescing stay on the device.
TEST(DeviceCounters, AnElmoStepOnCudaNeverReadsBetweenLoggingSteps) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no GPU present: the CUDA step's host reads are not counted";
  const DeviceCounters k = per_step("elmo-cuda", "", "cuda");
  EXPECT_EQ(k.host_reads, 0);
}

// With graphs on a GPU, in a real training loop: every step records its 8 LSTM chains (none falls
// back to launching), reads nothing, and starts far fewer launches than it makes.
TEST(DeviceCounters, AnElmoStepOnCudaWithGraphsRecordsItsLstmChains) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no GPU present: nothing is recorded";
  testing::ScopedEnv graphs("SA_CUDA_GRAPHS", "1");
  const DeviceCounters k = per_step("elmo-cuda-graphs", "", "cuda");
  EXPECT_EQ(k.graphs, 8) << "a chain was launched kernel by kernel (see the message above)";
  EXPECT_EQ(k.graph_breaks, 0);
  EXPECT_EQ(k.host_reads, 0);
  EXPECT_LT(k.gpu_launches(), k.launches / 2) << k.launches << " launches, " << k.in_graphs << " in graphs";
}

// On a GPU, in a real training loop with SA_CUDA_GRAPHS=step: every steady step is recorded (no
// piece fails, or the run would have stopped), its pieces hold most of its launches, and the
// training's loss is the launched training's (within 1e-5: cuBLAS may choose other kernels while
// recording).
TEST(DeviceCounters, AnElmoStepOnCudaWithStepGraphsIsRecordedInPieces) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no GPU present: nothing is recorded";
  testing::ScopedEnv graphs("SA_CUDA_GRAPHS", nullptr), streams("SA_LSTM_STREAMS", nullptr);
  const double launched = per_step_loss("elmo-cuda-launched", "", "cuda");
  for (const char* lanes : {static_cast<const char*>(nullptr), "1"}) {
    SCOPED_TRACE(lanes ? "SA_LSTM_STREAMS=1" : "one stream");
    streams.set(lanes);
    graphs.set("step");
    DeviceCounters k;
    const double recorded = per_step_loss(std::string("elmo-cuda-step-graphs") + (lanes ? "-lanes" : ""), "", "cuda", &k);
    graphs.set(nullptr);
    EXPECT_GT(k.graphs, 0) << "no step was recorded (see any message above)";
    EXPECT_EQ(k.host_reads, 0);
    EXPECT_LT(k.gpu_launches() * 4, k.launches) << k.launches << " launches, " << k.in_graphs << " in " << k.graphs
                                                << " pieces";
    EXPECT_NEAR(recorded, launched, 1e-5 * std::abs(launched));
  }
}

// SaELMo keeps its selections on the device: the loss, the center update and the usage windows
// take them there (the windows read them on logging steps), so between logging and refit steps a
// step never waits for the host. With pca_every = 20 the one refit of this run is at step 1.
TEST(DeviceCounters, ASaelmoStepNeverReadsBetweenLoggingSteps) {
  struct Budget {
    const char* negatives;
    int64_t uploads, launches;
  };
  // log_uniform (saelmo.cfg's) adds the log-Q shifts of the true and sampled rows; uniform
  // negatives are drawn on the device (ops::draw_distinct: a launch, no upload, per direction)
  for (const auto& [negatives, uploads, launches] : {Budget{"uniform", 22, 410}, Budget{"log_uniform", 28, 416}}) {
    SCOPED_TRACE(negatives);
    std::string why;
    double rows = 0;
    const DeviceCounters k =
        per_step(std::string("saelmo-") + negatives,
                 std::string("n_context = 3\ncontextual_warmup = 2\ncluster_proj_dim = 4\npca_sample = 40\n"
                             "pca_every = 20\nsense_negatives = \"") + negatives + "\"\n",
                 "cpu", &why, 6, &rows);
    EXPECT_DOUBLE_EQ(rows, 8);          // n_negative_samples_batch sense rows
    EXPECT_EQ(k.host_reads, 0);         // 2 (the selection of each head) before
    EXPECT_LE(k.uploads, uploads);      // the batch, the sampled rows and the selection's candidates
    EXPECT_LE(k.launches, launches);    // every primitive counted, as in ELMo's budget
    EXPECT_NE(why.find("refit"), std::string::npos) << why;  // the reads left, named
  }
  // saelmo.cfg's budget: 8 log-uniform words, each with every live sense (3 after the warm-up).
  double rows = 0;
  per_step("saelmo-words",
           "n_context = 3\ncontextual_warmup = 2\ncluster_proj_dim = 4\npca_sample = 40\npca_every = 20\n"
           "sense_negatives = \"log_uniform\"\nsense_negative_budget = \"words\"\n",
           "cpu", nullptr, 6, &rows);
  EXPECT_GT(rows, 8);
  EXPECT_LE(rows, 24);
}

// On CUDA too: the center update coalesces the selection on the device (padded, no size read back).
TEST(DeviceCounters, ASaelmoStepOnCudaNeverReadsBetweenLoggingSteps) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no GPU present: the CUDA step's host reads are not counted";
  for (const char* negatives : {"uniform", "log_uniform"}) {
    SCOPED_TRACE(negatives);
    const DeviceCounters k =
        per_step(std::string("saelmo-cuda-") + negatives,
                 std::string("n_context = 3\ncontextual_warmup = 2\ncluster_proj_dim = 4\npca_sample = 40\n"
                             "pca_every = 20\nsense_negatives = \"") + negatives + "\"\n",
                 "cuda");
    EXPECT_EQ(k.host_reads, 0);
  }
}

}  // namespace
}  // namespace sa
