// What every trainer does with its run directory: take the lock, drop a killed run's temporaries,
// refuse a resume whose config changed what the steps compute, write the resolved config.cfg, and
// keep metrics.jsonl (lines after the resumed step dropped, each line flushed). Shared by the
// ELMo and BERT trainers.
#pragma once
#include <fstream>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "train/config.h"
#include "train/run_lock.h"

namespace sa {

class RunSession {
 public:
  // Locks c.run_dir (creating it) and checks a resume. `resolved` gets the saved config's
  // n_train_tokens when the run resumes and c leaves it 0.
  RunSession(const TrainConfig& c, TrainConfig& resolved);
  // Drops metric lines after `step`, then opens metrics.jsonl for appending.
  void open_metrics(int64_t step);
  // The "tokens" (seen since the run began) of the last line kept by open_metrics: where this
  // invocation's count continues from.
  int64_t tokens_before() const { return tokens_before_; }
  void log(const nlohmann::json& j);
  // Restores the newest intact checkpoint with `restore`. A damaged one (CheckpointDamaged:
  // truncated, malformed, a tensor missing) is moved aside to NAME.damaged, `reset` gives a fresh
  // state, and the previous one is tried. Returns the checkpoint restored ("" when there is none)
  // and whether it fell back past a damaged one.
  std::pair<std::string, bool> restore_newest(const std::function<void(const std::string&)>& restore,
                                              const std::function<void()>& reset) const;
  // Removes all but the newest keep checkpoints.
  void prune_checkpoints(int keep) const;
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  std::unique_ptr<RunLock> lock_;
  std::ofstream metrics_;
  int64_t tokens_before_ = 0;
};

// "m:ss" or "h:mm:ss", for ETAs.
std::string clock_str(double seconds);

}  // namespace sa
