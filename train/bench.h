// bin/bench's subcommands (train/tools/bench.cpp parses the command line): `ops` times each op
// against what it replaces, `train` a config's training steps beside the reference
// implementations (train/peers.h), `embed` embedding a text beside them; `memory` is in
// train/memory_bench.h.
#pragma once
#include <set>
#include <string>
#include <vector>

#include "engine/core/device.h"

namespace sa {

// Every op group (`only` empty) or the named ones: core, elementwise, lstm, bilstm, ner,
// candidate_softmax, select_rows, negatives, char_cnn, crf, attention.
void bench_ops(Device d, bool quick, const std::set<std::string>& only);

struct TrainBenchArgs {
  std::string config = "configs/bench-small.cfg", corpus, device = "auto";
  std::vector<std::string> peers = {"auto"};  // names in train/peers.h; "auto": each one installed
  int steps = 40;
  std::vector<std::string> overrides;
  bool time_phases = false;
  std::string profile;
  bool no_arithmetic = false;  // the CPU's host path alone (set_cpu_arithmetic)
  bool replay_audit = false;   // what replaying a captured step would have to change (engine/replay_audit.h)
};
int bench_train(const TrainBenchArgs& args);

struct EmbedBenchArgs {
  std::string model, input, device = "cpu";
  std::vector<std::string> peers = {"auto"};
  int batch_size = 64;
  bool stateful = false;
};
int bench_embed(const EmbedBenchArgs& args);

}  // namespace sa
