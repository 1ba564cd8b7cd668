// bench memory: whether a long run's memory stays flat. Trains a config for many steps, then
// embeds many tokens with the trained model, sampling the process's resident memory (and the
// tensors our allocator holds) as it goes; reports the growth after warm-up.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace sa {

struct MemoryBenchOptions {
  std::string config = "configs/bench-small.cfg";
  std::string corpus;                 // default: the config's train_prefix
  int64_t steps = 5000;
  int64_t embed_tokens = 200000;
  int64_t sample_every = 50;          // training steps between samples
  double warmup_fraction = 0.1;       // growth counts from the end of this part of each phase
  std::vector<std::string> overrides; // --set
};

// Prints one line per phase (RSS after warm-up, at the end, its maximum, growth in percent)
// and returns 0.
int bench_memory(const MemoryBenchOptions& o);

}  // namespace sa
