// An exclusive lock on a run directory: one bin/train per run at a time. flock on RUN/.lock, held
// for the life of the object; the kernel drops it when the process exits or crashes, so a killed
// run never leaves a stale lock. The file holds the holder's PID for the message a second trainer
// gets.
#pragma once
#include <string>

namespace sa {

class RunLock {
 public:
  // Fails at once, naming the holder's PID, when another process holds the lock.
  explicit RunLock(const std::string& run_dir);
  ~RunLock();
  RunLock(const RunLock&) = delete;
  RunLock& operator=(const RunLock&) = delete;
  // Whether a process holds the lock of `run_dir` now (a bin/train is running there).
  static bool held(const std::string& run_dir);

 private:
  int fd_ = -1;
};

}  // namespace sa
