#include "train/memory_bench.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "data/corpus.h"
#include "engine/engine.h"
#include "layers/load_encoder.h"
#include "train/families.h"
#include "train/run_session.h"

namespace sa {

namespace {

// Resident memory of this process in MiB (/proc/self/statm: pages).
double resident_mib() {
  std::ifstream f("/proc/self/statm");
  long pages = 0, resident = 0;
  f >> pages >> resident;
  return static_cast<double>(resident) * static_cast<double>(::sysconf(_SC_PAGESIZE)) / 1048576.0;
}

double tensors_mib() { return host_allocator().stats().in_use / 1048576.0; }
double reserved_mib() { return host_allocator().stats().reserved / 1048576.0; }

// Samples of one phase; growth is measured from the first sample at or after the warm-up.
struct Phase {
  const char* name;
  double warmup_at;  // in the phase's unit (steps, tokens)
  double warm_rss = -1, warm_tensors = 0, warm_reserved = 0, max_rss = 0, last_rss = 0, last_tensors = 0, last_reserved = 0;
  int samples = 0;
  void sample(double at) {
    const double rss = resident_mib(), tensors = tensors_mib(), reserved = reserved_mib();
    ++samples;
    if (at >= warmup_at && warm_rss < 0) warm_rss = rss, warm_tensors = tensors, warm_reserved = reserved;
    if (warm_rss >= 0) max_rss = std::max(max_rss, rss);
    last_rss = rss, last_tensors = tensors, last_reserved = reserved;
  }
  void report(const char* unit, double total) const {
    if (warm_rss < 0) {
      std::printf("%-9s %9.0f %s | too short to pass its warm-up: no growth to report\n", name, total, unit);
      return;
    }
    std::printf("%-9s %9.0f %s | RSS after warm-up %.1f MiB, at the end %.1f MiB, max %.1f MiB | growth %+.2f%% "
                "(max %+.2f%%) | tensors in use %.1f -> %.1f MiB, allocator's reserve %.1f -> %.1f MiB | %d samples\n",
                name, total, unit, warm_rss, last_rss, max_rss, 100 * (last_rss - warm_rss) / warm_rss,
                100 * (max_rss - warm_rss) / warm_rss, warm_tensors, last_tensors, warm_reserved, last_reserved, samples);
  }
};

}  // namespace

int bench_memory(const MemoryBenchOptions& o) {
  const std::string dir =
      (std::filesystem::temp_directory_path() / ("sensealign-bench-memory-" + std::to_string(::getpid()))).string();
  std::vector<std::string> sets = {"run_dir=" + dir, "n_steps=" + std::to_string(o.steps), "heldout_prefix=",
                                   "checkpoint_every=" + std::to_string(o.steps), "device=cpu"};
  if (!o.corpus.empty()) sets.push_back("train_prefix=" + o.corpus);
  sets.insert(sets.end(), o.overrides.begin(), o.overrides.end());
  const TrainConfig c = TrainConfig::load(TrainConfig::find(o.config), sets);
  std::printf("bench memory: %s on %s, %ld steps, then %ld tokens embedded; warm-up: the first %.0f%% of each\n",
              o.config.c_str(), c.train_prefix.c_str(), (long)o.steps, (long)o.embed_tokens, 100 * o.warmup_fraction);
  std::fflush(stdout);

  Phase train{"train", o.warmup_fraction * static_cast<double>(o.steps)};
  TrainOptions to;
  to.quiet = true;
  const auto t0 = std::chrono::steady_clock::now();
  to.after_step = [&](int64_t step) {
    if (step % o.sample_every == 0 || step == o.steps) train.sample(static_cast<double>(step));
    if (step % 250 == 0 || step == o.steps) {  // progress: the training itself runs quiet
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::printf("step %ld/%ld | RSS %.1f MiB | tensors %.1f MiB | ETA %s\n", (long)step, (long)o.steps, resident_mib(),
                  tensors_mib(), clock_str(s / static_cast<double>(step) * static_cast<double>(o.steps - step)).c_str());
      std::fflush(stdout);
    }
  };
  const TrainResult r = train_model(c, to);
  train.report("steps", static_cast<double>(r.steps_done));
  std::printf("          %.0f tokens/s\n", r.tokens_per_s);
  std::fflush(stdout);

  // Embedding with the trained model, as bin/embed does it: batches of 32 corpus sentences.
  EncoderSource source;
  source.run_dir = dir;
  const auto encoder = load_encoder(source, Device::cpu());
  Phase embed{"embed", o.warmup_fraction * static_cast<double>(o.embed_tokens)};
  int64_t tokens = 0;
  const std::vector<std::string> files = expand_glob(c.train_prefix);
  for (int64_t before = -1; tokens < o.embed_tokens && tokens > before;) {
    before = tokens;
    for (const std::string& file : files) {
      Sentences batch;
      int64_t pending = 0;  // tokens of `batch`, counted once embedded
      auto flush = [&] {
        if (batch.empty()) return;
        encoder->embed(batch);
        tokens += pending;
        batch.clear(), pending = 0;
        embed.sample(static_cast<double>(tokens));
      };
      for (Sentence& s : read_sentences(file, c.lowercase)) {
        if (tokens + pending >= o.embed_tokens) break;
        pending += static_cast<int64_t>(s.size());
        batch.push_back(std::move(s));
        if (batch.size() == 32) flush();
      }
      flush();
      if (tokens >= o.embed_tokens) break;
    }
  }
  embed.report("tokens", static_cast<double>(tokens));
  std::filesystem::remove_all(dir);
  return 0;
}

}  // namespace sa
