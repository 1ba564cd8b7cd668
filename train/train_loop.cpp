#include "train/train_loop.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cmath>
#include <cstdio>
#include <optional>

#include "engine/core/error.h"
#include "engine/dist/communicator.h"
#include "engine/engine.h"
#include "engine/replay_audit.h"
#include "train/stop_signal.h"

namespace sa {

void report_sense_events(const RunOutput& out, int64_t step, const SenseOptions& o, SenseEvents ev,
                         const std::string& note) {
  if (ev.warmup_ended && !out.quiet)
    std::printf("step %ld: warm-up done, senses 1..%d enabled%s\n", (long)step, o.n_context - 1, note.c_str());
  if (ev.pruned >= 0) {
    out.log({{"step", step}, {"senses_removed", ev.pruned}});
    if (!out.quiet) std::printf("step %ld: pruning removed %d senses\n", (long)step, ev.pruned);
  }
}

TrainResult run_training(ModelFamily& f, const TrainConfig& c, const RunOutput& out, const TrainOptions& opts,
                         StepPhases& phases) {
  using clock = std::chrono::steady_clock;
  auto seconds_since = [](clock::time_point t) { return std::chrono::duration<double>(clock::now() - t).count(); };
  TrainResult res;
  const int64_t first = f.step(), total = f.total_steps();
  const int64_t warm = 5;  // steps before the steady rate is timed (allocation warm-up)
  const auto t0 = clock::now();
  auto t_warm = t0;
  double last_line_s = 0;  // when the console last got a progress line
  // The count a resume from this checkpoint continues from (logged first: a kill before the
  // checkpoint is complete resumes from an earlier one, and this line is dropped with it).
  auto save_checkpoint = [&](int64_t step, int64_t tokens_now) {
    out.log({{"step", step}, {"tokens", out.tokens_before() + tokens_now}, {"checkpoint", true}});
    f.save();
  };
  int64_t tokens = 0, tokens_warm = 0;
  DeviceCounters counted_from = device_counters();
  Tensor smooth;  // the console's moving average, on the device
  // With SA_CUDA_GRAPHS=step each step is recorded as CUDA graphs (StepGraphs), as a kind of its
  // own for each run: a run's first step is launched. Not while phases are timed (every mark waits
  // for the device: pieces of an op or two), nor over several ranks (NCCL's all-reduce inside a
  // recording is untested).
  static std::atomic<uint64_t> runs{0};
  const uint64_t step_kind = 0x5354455053ull + ++runs;
  const bool record_steps = !phases.on() && dist::size() == 1;
  while (f.step() < total && (opts.max_new_steps <= 0 || f.step() - first < opts.max_new_steps)) {
    phases.start();
    std::optional<StepGraphs> recorded;
    if (record_steps) recorded.emplace(f.device(), step_kind);
    replay_audit::step_begun();
    const StepStats st = f.train_step(phases);
    replay_audit::step_ended();
    const int64_t step = f.step();
    tokens += st.tokens;
    if (step - first > warm) res.encoded_tokens += st.encoded_tokens, res.softmax_rows += st.softmax_rows;
    if (!out.quiet) {  // only the console shows it
      NoGrad ng;
      smooth = step == first + 1 ? st.loss : ops::add(ops::scale(smooth, 0.95), ops::scale(st.loss, 0.05));
    }
    if (recorded) recorded->close();
    const bool logs = step % c.log_every == 0 || step == total;
    const bool scores = f.scores_heldout() && ((c.heldout_every > 0 && step % c.heldout_every == 0) || step == total);
    const bool saves = step % c.checkpoint_every == 0 || step == total;
    const bool last = step == total || (opts.max_new_steps > 0 && step - first == opts.max_new_steps);
    // Console-only lines for slow steps: the first if it took 10 s, then at least every 30 s. (The
    // rate below reads the clock again after the loss's read, which waits for the device.)
    const double now_s = seconds_since(t0);
    const bool timely = !out.quiet && !logs && ((step == first + 1 && now_s >= 10) || now_s - last_line_s >= 30);
    if (logs || scores || saves || last || timely) {
      res.last_loss = st.loss.item();
      SA_CHECK(std::isfinite(res.last_loss), "step {}: the loss is {} ({})", step, res.last_loss, f.divergence_hint());
    }
    // progress
    const double el = seconds_since(t0);
    res.tokens_per_s = static_cast<double>(tokens) / el;
    if (step - first == warm) {
      t_warm = clock::now(), tokens_warm = tokens;
      counted_from = device_counters();
      phases.reset();
      replay_audit::reset_totals();
    }
    if (step - first > warm) {  // the timed steps' time and counts, both before this step's scoring and saving
      res.steady_seconds = seconds_since(t_warm);
      res.steady_tokens_per_s = static_cast<double>(tokens - tokens_warm) / res.steady_seconds;
      res.steady_counters = device_counters() - counted_from;
    }
    if (logs) {
      const double lv = res.last_loss;
      nlohmann::json line = {{"step", step}, {"loss", lv}, {"perplexity", std::exp(lv)},
                             {"tokens_per_s", res.tokens_per_s}, {"elapsed_s", el},
                             {"tokens", out.tokens_before() + tokens}};
      line.update(f.step_metrics());
      out.log(line);
    }
    if ((logs || timely) && !out.quiet) {
      // The console smooths (a moving average); metrics.jsonl logs each step's own loss.
      const double sm = smooth.item();
      std::printf("step %ld/%ld | %.0f tokens/s | ETA %s | smoothed %s %.3f | perplexity %.1f\n", (long)step,
                  (long)total, res.tokens_per_s, clock_str(el / (step - first) * (total - step)).c_str(), f.loss_name(),
                  sm, std::exp(sm));
      std::fflush(stdout);
      last_line_s = el;
    }
    // Held-out text every heldout_every steps and once at the end; a rerun of a finished run
    // trains nothing and logs nothing.
    if (scores) {
      res.heldout_perplexity = f.heldout_perplexity();
      out.log({{"step", step}, {"heldout_perplexity", res.heldout_perplexity}});
      if (!out.quiet) std::printf("step %ld: held-out perplexity %.1f\n", (long)step, res.heldout_perplexity);
    }
    if (saves) save_checkpoint(step, tokens);
    // A stop signal that came during this step or its bookkeeping: this step's checkpoint, then out.
    if (const int stop = stop_signal()) {
      if (!saves) {
        res.last_loss = st.loss.item();
        SA_CHECK(std::isfinite(res.last_loss), "step {}: the loss is {} ({})", step, res.last_loss, f.divergence_hint());
        save_checkpoint(step, tokens);
      }
      res.stopped_by = stop;
      if (!out.quiet)
        std::printf("train: stopped at step %ld/%ld by %s after writing its checkpoint; rerun the same command to "
                    "resume\n", (long)step, (long)total, stop == SIGINT ? "an interrupt" : "SIGTERM"), std::fflush(stdout);
      break;
    }
    if (opts.after_step) opts.after_step(step);
  }
  res.steps_done = f.step();
  res.host_reads_why = f.host_reads_per_step();
  res.replay = f.replay_summary();
  res.steady_steps = std::max<int64_t>(0, f.step() - first - warm);
  res.phase_seconds = phases.totals();
  res.backward_op_seconds = phases.backward_ops();
  res.forward_op_seconds = phases.forward_ops();
  return res;
}

}  // namespace sa
