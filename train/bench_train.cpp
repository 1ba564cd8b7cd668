// bench train: a config's training steps (tokens/s after 5 warm-up steps, peak memory, host reads
// and launches per step, the share of the raw BLAS's GEMM throughput, phases) and the reference
// implementations of train/peers.h on the same corpus, vocabulary and options in the same run.
#include <sys/resource.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <map>
#include <thread>
#include <unistd.h>

#include "data/run_files.h"
#include "engine/bench_support.h"
#include "engine/cpu/blas_kernel.h"
#include "engine/engine.h"
#include "engine/replay_audit.h"
#include "engine/upload_paths.h"
#include "train/bench.h"
#include "train/cpu_profiler.h"
#include "train/families.h"
#include "train/peers.h"
#include "train/periodic_work.h"
#include "train/step_flops.h"

namespace sa {
namespace {

double peak_rss_mib(int who) {
  rusage u{};
  getrusage(who, &u);
  return u.ru_maxrss / 1024.0;
}

// The model's FLOPs per token and the fraction of this machine's GEMM throughput that training
// reaches: each product of a step (train/step_flops.h) timed through the raw BLAS at its shape,
// its backward as StepGemm::backward times its forward, against the step's measured time. Returns
// the ceiling: the tokens/s of a step whose products all ran at the machine's best square-GEMM
// rate and whose other work took no time, about the most any implementation of the model's
// arithmetic reaches here (and so the ratio to a peer; one that skips repeated work, as the CPU's
// char CNN does, passes it by that work's share).
double report_gemm_fraction(const TrainConfig& c, const TrainResult& r, int steps, Device d) {
  const std::vector<StepGemm> gemms =
      elmo_step_gemms(c, static_cast<double>(r.encoded_tokens) / steps, r.softmax_rows / steps);
  const double tokens = static_cast<double>(c.batch_size) * c.unroll_steps;
  double flops = 0, ideal = 0;
  std::map<std::array<int64_t, 3>, double> seconds;  // per shape, timed once over about 0.3 s of calls
  // On a GPU, the math the run's products get: TF32 tensor cores under tf32 and bf16 (their f32
  // products; bf16's own are faster still), plain f32 otherwise.
  const bool tf32 = d.is_cuda() && (c.precision == "tf32" || c.precision == "bf16");
  auto raw = [&](int64_t m, int64_t n, int64_t k) {
    auto [it, fresh] = seconds.try_emplace({m, n, k}, 0.0);
    if (fresh) {
      const double once = raw_gemm_seconds(d, m, n, k, 1, tf32);
      it->second =
          raw_gemm_seconds(d, m, n, k, static_cast<int>(std::clamp(0.3 / std::max(once, 1e-9), 3.0, 2000.0)), tf32);
    }
    return it->second;
  };
  std::printf("model products per step (forward; the backward twice each, the char CNN's only its winning windows), at the raw %s's speed:\n",
              d.is_cuda() ? (tf32 ? "cuBLAS (TF32 math)" : "cuBLAS (f32 math)")
                          : ("BLAS (core " + blas_kernel().core + ")").c_str());
  for (const StepGemm& g : gemms) {
    const double t = raw(g.m, g.n, g.k);
    flops += g.flops();
    ideal += (1 + g.backward) * t * g.calls;  // the backward timed as products of the forward's shape
    char shape[64];
    std::snprintf(shape, sizeof shape, "%ldx%ldx%ld", (long)g.m, (long)g.n, (long)g.k);
    std::printf("  %-22s %-18s x%-5g %8.1f GF/s\n", g.what.c_str(), shape, g.calls, 2.0 * g.m * g.n * g.k / t / 1e9);
  }
  const double step_s = tokens / r.steady_tokens_per_s;
  std::printf("model: %.2f MFLOP per token in products (forward + backward), %.1f GFLOP/s achieved | a step at the "
              "raw BLAS's speed for these shapes: %.1f ms, measured: %.1f ms | %.0f%% of GEMM throughput\n",
              flops / tokens / 1e6, flops / step_s / 1e9, ideal * 1e3, step_s * 1e3, 100 * ideal / step_s);
  double best = 0;
  int64_t best_n = 0;
  // Square products large enough to reach the device's rate: a GPU needs far larger ones.
  const std::vector<int64_t> sizes = d.is_cuda() ? std::vector<int64_t>{2048, 4096, 8192} : std::vector<int64_t>{512, 1024, 2048};
  for (int64_t n : sizes) {
    const double rate = 2.0 * static_cast<double>(n * n * n) / raw(n, n, n);
    if (rate > best) best = rate, best_n = n;
  }
  const double ceiling = tokens / (flops / best);
  std::printf("ceiling: the model's products at this machine's best GEMM rate (%.1f GFLOP/s, %ld^3), all else free: "
              "%.1f ms a step, at most %.0f tokens/s; achieved %.0f%% of it\n",
              best / 1e9, (long)best_n, flops / best * 1e3, ceiling, 100 * r.steady_tokens_per_s / ceiling);
  return ceiling;
}

// Whether a GPU step waits for the host or the host for the GPU: the host's own work per step is
// the wall time less the time it sat blocked on the device. CUDA graphs and fewer launches save
// host work; they speed up only a step the host bounds. A launch blocks inside the driver once the
// GPU's queue is full, and that time counts as the host's own: a GPU-bound step of many launches
// looks host-bound. Under SA_CUDA_GRAPHS=1 few launches queue, so the waits show where they are.
std::string host_time_line(double step_s, double wait_s, bool time_phases) {
  const double work = step_s - wait_s;
  std::string line = fmt::format("  host per step: {:.1f} ms of its own work, {:.1f} ms waiting for the GPU, of a {:.1f} ms step",
                                 work * 1e3, wait_s * 1e3, step_s * 1e3);
  if (time_phases) return line + " (--phases makes it wait at every phase: no verdict)";
  if (work < 0.7 * step_s) return line + ": the GPU bounds the step";
  return line + ": the host bounds the step, or its launches wait for a full GPU queue (the same step time under "
                "SA_CUDA_GRAPHS=1, with the waits shown, means the GPU bounds it)";
}

}  // namespace

int bench_train(const TrainBenchArgs& args) {
  std::string dir = (std::filesystem::temp_directory_path() / ("sensealign-bench-" + std::to_string(::getpid()))).string();
  // Every word in the vocabulary, as the PyTorch peer builds it: the same V on both sides.
  std::vector<std::string> sets = {"run_dir=" + dir, "n_steps=" + std::to_string(args.steps + 5), "heldout_prefix=",
                                   "checkpoint_every=1000000", "device=" + args.device, "vocab_min_count=1"};
  if (!args.corpus.empty()) sets.push_back("train_prefix=" + args.corpus);
  sets.insert(sets.end(), args.overrides.begin(), args.overrides.end());
  TrainConfig c = TrainConfig::load(TrainConfig::find(args.config), sets);
  const ModelFamilyInfo& family = model_family(c.model_type);
  std::printf("bench train: %s on %s, %d timed steps after 5 warm-up steps of %s\n", args.config.c_str(), c.train_prefix.c_str(),
              args.steps, family.batch_shape(c).c_str());
  SA_CHECK(!(args.no_arithmetic || args.replay_audit) || !resolve_device(c.device).is_cuda(),
           "{} measures the CPU backend's host path: run it with --device cpu",
           args.no_arithmetic ? "--no-arithmetic" : "--replay-audit");
  if (args.no_arithmetic)
    std::printf("no arithmetic: every backend primitive returns at once (the rate is the host path's alone)\n");
  else if (!resolve_device(c.device).is_cuda())
    std::printf("BLAS: %s\n", blas_kernel_line().c_str());
  if (args.replay_audit) replay_audit::start();
  TrainOptions to;
  to.quiet = true;
  to.time_phases = args.time_phases;
  // --profile: samples the timed steps after the 5 warm-up steps, as the rate, but the last: the
  // run's final checkpoint is written inside it, and would fill half the profile.
  // --no-arithmetic: from the second warm-up step on, after a first step has set everything up.
  CpuProfiler profiler;
  int64_t seen = 0;
  to.after_step = [&](int64_t) {
    ++seen;
    if (seen == 1 && args.no_arithmetic) set_cpu_arithmetic(false);
    if (args.profile.empty()) return;
    if (seen == 5) profiler.start(args.profile);
    if (seen == 4 + args.steps) profiler.stop();
  };
  TrainResult r = train_model(c, to);
  set_cpu_arithmetic(true);
  const ReplayAudit audit = replay_audit::totals();
  replay_audit::stop();
  profiler.stop();
  if (!args.profile.empty())
    std::printf("CPU profile of the timed steps but the last: %s (google-pprof --text bin/bench %s)\n", args.profile.c_str(), args.profile.c_str());
  AllocatorStats hs = host_allocator().stats();
  std::printf("sensealign: %.0f tokens/s | peak RSS %.0f MiB | peak tensor memory %.0f MiB (host)",
              r.steady_tokens_per_s, peak_rss_mib(RUSAGE_SELF), hs.peak_in_use / 1048576.0);
  const Device d = resolve_device(c.device);
  if (d.is_cuda()) {
    AllocatorStats ds = backend_uncounted(d).allocator().stats();
    std::printf(" | peak device memory %.0f MiB in use, %.0f MiB reserved at the end (%s)",
                ds.peak_in_use / 1048576.0, ds.reserved / 1048576.0, d.str().c_str());
  }
  std::printf("\n");
  if (r.steady_steps > 0) {
    const DeviceCounters& k = r.steady_counters;
    const double n = static_cast<double>(r.steady_steps);
    std::printf("per step (%ld steps): %.1f host reads, %.1f uploads, %.1f backend launches%s%s\n", (long)r.steady_steps,
                k.host_reads / n, k.uploads / n, k.launches / n,
                d.is_cuda() ? fmt::format(", {:.1f} CUDA kernels of ours", k.kernels / n).c_str() : "",
                k.lanes > 0 ? fmt::format(", {:.1f} side streams forked", k.lanes / n).c_str() : "");
    if (k.graphs > 0)  // on the CPU: what a GPU would record with the same setting (SA_CUDA_GRAPHS)
      std::printf("  %.1f of those launches in %.1f CUDA graphs%s: %.1f launches a step %s\n", k.in_graphs / n,
                  k.graphs / n, k.graph_breaks > 0 ? fmt::format(" ({:.1f} read or upload)", k.graph_breaks / n).c_str() : "",
                  k.gpu_launches() / n, d.is_cuda() ? "started on the GPU" : "a GPU would start");
    if (!r.host_reads_why.empty()) std::printf("  host reads left per step: %s\n", r.host_reads_why.c_str());
    if (!r.replay.empty()) std::printf("  step replay (SA_STEP_REPLAY): %s\n", r.replay.c_str());
    if (d.is_cuda()) std::printf("%s\n", host_time_line(r.steady_seconds / n, k.wait_ns * 1e-9 / n, args.time_phases).c_str());
    if (args.no_arithmetic)
      std::printf("  host per step without arithmetic: %.2f ms, %.1f us a backend launch\n", r.steady_seconds / n * 1e3,
                  k.launches > 0 ? r.steady_seconds / static_cast<double>(k.launches) * 1e6 : 0.0);
    if (const std::string p = periodic_work_line(c, 6, 5 + args.steps); !p.empty()) std::printf("%s\n", p.c_str());
    if (args.replay_audit) std::printf("  %s\n", replay_audit::summary(audit).c_str());
  }
  if (d.is_cuda()) {  // whether the switches of the upload path took effect (SA_SYNC_UPLOADS, SA_COPY_STREAM)
    const cuda::UploadPaths u = cuda::upload_paths(d.index);
    std::printf("  uploads over the run: %ld through pinned slots, %ld of them on the copy stream\n", (long)u.staged,
                (long)u.on_copy_stream);
  }
  double ceiling = 0;
  if (family.gemm_report && r.steady_tokens_per_s > 0 && !args.no_arithmetic) ceiling = report_gemm_fraction(c, r, args.steps, d);
  if (args.time_phases) {
    double all = 0;
    for (const auto& [name, sec] : r.phase_seconds) all += sec;
    std::printf("step phases over %d steps (each waits for the device; %.1f ms per step in all):\n", args.steps,
                all / args.steps * 1e3);
    for (const auto& [name, sec] : r.phase_seconds)
      std::printf("  %-28s %9.3f ms  %5.1f%%\n", name.c_str(), sec / args.steps * 1e3, 100 * sec / all);
    auto by_op = [&](OpSeconds ops, const char* title) {
      std::sort(ops.begin(), ops.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
      std::printf("%s\n", title);
      for (size_t i = 0; i < ops.size() && i < 15; ++i)
        std::printf("  %-28s %9.3f ms\n", ops[i].first.c_str(), ops[i].second / args.steps * 1e3);
    };
    by_op(r.forward_op_seconds,
          "forward and loss by op (each op waits for the device; host work between ops counts to the op after it):");
    by_op(r.backward_op_seconds, "backward by op (each node waits for the device):");
  }
  // The reference implementations, same corpus, vocabulary, options and threads, in the same run.
  if (family.pytorch_peer && !args.no_arithmetic) {
    PeerJob job;
    job.config = &c;
    job.corpus = c.train_prefix, job.vocab = run_files::vocab(dir), job.options = run_files::options(dir);
    // A few steps of a big config (elmo.cfg takes minutes a step on the CPU): one warm-up step.
    job.steps = args.steps, job.warmup = args.steps >= 10 ? 5 : 1, job.threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    for (const Peer* p : choose_peers(args.peers, false)) report_peer(*p, job, false, r.steady_tokens_per_s, dir, ceiling);
  }
  std::filesystem::remove_all(dir);
  return 0;
}

}  // namespace sa
