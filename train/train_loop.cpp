#include "train/train_loop.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "engine/core/error.h"

namespace sa {

void check_finite_loss(int64_t step, double loss, const char* hint) {
  SA_CHECK(std::isfinite(loss), "step {}: the loss is {} ({})", step, loss, hint);
}

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
  int64_t tokens = 0, tokens_warm = 0;
  DeviceCounters counted_from = device_counters();
  double smooth = 0;
  while (f.step() < total && (opts.max_new_steps <= 0 || f.step() - first < opts.max_new_steps)) {
    phases.start();
    const StepStats st = f.train_step(phases);
    const int64_t step = f.step();
    tokens += st.tokens;
    if (step - first > warm) res.encoded_tokens += st.encoded_tokens;
    // progress
    smooth = step == first + 1 ? st.loss : 0.95 * smooth + 0.05 * st.loss;
    res.last_loss = st.loss;
    const double el = seconds_since(t0);
    res.tokens_per_s = static_cast<double>(tokens) / el;
    if (step - first == warm) {
      t_warm = clock::now(), tokens_warm = tokens;
      counted_from = device_counters();
      phases.reset();
    }
    if (step - first > warm) res.steady_tokens_per_s = static_cast<double>(tokens - tokens_warm) / seconds_since(t_warm);
    if (step % c.log_every == 0 || step == total) {
      nlohmann::json line = {{"step", step}, {"loss", st.loss}, {"perplexity", std::exp(st.loss)},
                             {"tokens_per_s", res.tokens_per_s}, {"elapsed_s", el}};
      line.update(f.step_metrics());
      out.log(line);
      if (!out.quiet) {
        // The console smooths (a moving average); metrics.jsonl logs each step's own loss.
        std::printf("step %ld/%ld | %.0f tokens/s | ETA %s | smoothed %s %.3f | perplexity %.1f\n", (long)step,
                    (long)total, res.tokens_per_s, clock_str(el / (step - first) * (total - step)).c_str(), f.loss_name(),
                    smooth, std::exp(smooth));
        std::fflush(stdout);
      }
    }
    // Held-out text every heldout_every steps and once at the end; a rerun of a finished run
    // trains nothing and logs nothing.
    if (f.scores_heldout() && ((c.heldout_every > 0 && step % c.heldout_every == 0) || step == total)) {
      res.heldout_perplexity = f.heldout_perplexity();
      out.log({{"step", step}, {"heldout_perplexity", res.heldout_perplexity}});
      if (!out.quiet) std::printf("step %ld: held-out perplexity %.1f\n", (long)step, res.heldout_perplexity);
    }
    if (step % c.checkpoint_every == 0 || step == total) f.save();
  }
  res.steps_done = f.step();
  res.steady_steps = std::max<int64_t>(0, f.step() - first - warm);
  if (res.steady_steps > 0) res.steady_counters = device_counters() - counted_from;
  res.phase_seconds = phases.totals();
  res.backward_op_seconds = phases.backward_ops();
  return res;
}

}  // namespace sa
