// bin/train: trains the model a config describes into its run directory; rerunning the same
// command resumes from the last checkpoint.
//   bin/train configs/elmo.cfg [--set key=value ...]   (or bin/train elmo.cfg: configs/ is searched)
#include <CLI/CLI.hpp>
#include <cstdio>

#include "engine/core/error.h"
#include "engine/dist/communicator.h"
#include "train/families.h"
#include "train/stop_signal.h"

int main(int argc, char** argv) {
  CLI::App app{"Train a SenseAlign model from a config file (rerun to resume)"};
  std::string config;
  std::vector<std::string> sets;
  app.add_option("config", config, "a config file (TOML), or the name of one in configs/")->required();
  app.add_option("--set", sets, "override a config key: --set key=value (repeatable)");
  app.footer("Keys: " + [] {
    std::string s;
    for (const std::string& k : sa::TrainConfig::keys()) s += (s.empty() ? "" : ", ") + k;
    return s;
  }());
  CLI11_PARSE(app, argc, argv);
  try {
    const std::string path = sa::TrainConfig::find(config);
    if (path != config) std::printf("config: %s\n", path.c_str()), std::fflush(stdout);
    sa::TrainConfig c = sa::TrainConfig::load(path, sets, true);
    // A first line at once: counting a large corpus and building the model take a while.
    if (sa::dist::rank() == 0)
      std::printf("train: %s into %s, device %s; reading %s\n", path.c_str(), c.run_dir.c_str(), c.device.c_str(),
                  c.train_prefix.c_str());
    if (sa::dist::size() == 1) sa::install_stop_signals();
    const sa::TrainResult r = sa::train_model(c);
    if (r.stopped_by) return 128 + r.stopped_by;  // the shell's code for a signalled process
  } catch (const std::exception& e) {
    const int rc = sa::tool_failure("train", e);
    // Under mpirun the other ranks may be waiting in a collective: end the whole job.
    try {
      if (sa::dist::size() > 1) sa::dist::abort_all(rc);
    } catch (const std::exception&) {  // a build without MPI started by a launcher: said above
    }
    return rc;
  }
  return 0;
}
