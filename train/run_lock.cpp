#include "train/run_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "engine/core/error.h"

namespace sa {

RunLock::RunLock(const std::string& dir) {
  const std::string path = (std::filesystem::path(dir) / ".lock").string();
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  SA_CHECK(fd_ >= 0, "{}: cannot create the run's lock file ({})", path, std::strerror(errno));
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    char pid[32] = {};
    const ssize_t n = ::pread(fd_, pid, sizeof pid - 1, 0);
    ::close(fd_);
    fd_ = -1;
    SA_CHECK(err != EWOULDBLOCK, "{}: another bin/train is using this run directory (PID {}); wait for it or stop it",
             dir, n > 0 ? std::string(pid, static_cast<size_t>(n)) : std::string("unknown"));
    fail("{}: cannot lock ({})", path, std::strerror(err));
  }
  const std::string me = std::to_string(::getpid());
  // Best effort: the PID is only for the message above.
  if (::ftruncate(fd_, 0) == 0 && ::pwrite(fd_, me.data(), me.size(), 0) < 0) {
  }
}

bool RunLock::held(const std::string& dir) {
  const std::string path = (std::filesystem::path(dir) / ".lock").string();
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;  // never trained, or not a run
  const bool busy = ::flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  ::close(fd);  // releases the shared lock taken when free
  return busy;
}

RunLock::~RunLock() {
  if (fd_ >= 0) ::close(fd_);  // closing releases the lock
}

}  // namespace sa
