// The reference implementations that `bench train` and `bench embed` run beside ours, as one table:
// each peer is an interpreter (a virtual environment that `make peers` installs under
// build/peers/, or Debian's python3) and a script, given the same corpus, vocabulary, options
// and threads. A peer prints `tokens_per_s X` (and may print `version ...`); its peak memory is
// the child process's maximum resident set.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "train/config.h"

namespace sa {

// What a peer is given: our run's bilm-tf files and the work to do.
struct PeerJob {
  const TrainConfig* config = nullptr;
  std::string corpus, vocab, options;  // training: the text, bilm-tf's vocab.txt and options.json
  std::string weights, input, output;  // embedding: the model's weights.hdf5, the text, the HDF5 to write
  int steps = 0, warmup = 5, threads = 1;  // timed steps after `warmup` untimed ones
};

struct Peer {
  std::string name;    // --peer NAME
  std::string python;  // the interpreter, relative to the checkout
  std::string needs;   // how to get it, when it is missing
  // The script's arguments for training and for embedding; an empty function: not offered. A
  // non-empty `why_not` skips the job with that reason (e.g. sizes the script cannot take).
  std::function<std::vector<std::string>(const PeerJob&, std::string& why_not)> train, embed;
};

const std::vector<Peer>& peers();
// "auto": every peer offering the job whose interpreter is present; else the named ones, each
// checked to exist.
std::vector<const Peer*> choose_peers(const std::vector<std::string>& names, bool embed);

struct PeerResult {
  bool ok = false;
  double tokens_per_s = 0, peak_rss_mib = 0;
  std::string version;  // what the script reported, e.g. "bilm 0.1.post5, tensorflow 2.21.0"
  std::string error;    // why it failed: the exit status and the last lines it printed
};
// Runs `python args...` from the checkout, its output to `log`, and reads its report.
PeerResult run_peer(const Peer& p, const std::vector<std::string>& args, const std::string& log);
// One line per peer: its rate, memory and our rate's ratio to it (and the ceiling's, when given:
// the most any implementation reaches here, bench train's); a failed or skipped peer is named with
// the reason and the others go on.
void report_peer(const Peer& p, const PeerJob& job, bool embed, double our_tokens_per_s, const std::string& log_dir,
                 double ceiling = 0);

}  // namespace sa
