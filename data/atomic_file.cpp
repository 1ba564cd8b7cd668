#include "data/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "engine/core/error.h"

namespace sa {

void commit_file(const std::string& tmp, const std::string& path) {
  auto give_up = [&](const char* what, int err) {
    std::remove(tmp.c_str());
    fail("{}: cannot {} ({})", path, what, std::strerror(err));
  };
  int fd = ::open(tmp.c_str(), O_RDONLY);
  if (fd < 0) give_up("reopen the written file", errno);
  if (::fsync(fd) != 0) {
    const int err = errno;
    ::close(fd);
    give_up("sync", err);
  }
  ::close(fd);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) give_up("rename into place", errno);
  // The rename itself is durable once the directory is synced.
  std::string dir = std::filesystem::path(path).parent_path().string();
  int dfd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (dfd >= 0) ::fsync(dfd), ::close(dfd);
}

void write_parts_atomically(const std::string& path, const std::vector<std::pair<const char*, size_t>>& parts) {
  const std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  SA_CHECK(fd >= 0, "{}: cannot write ({})", path, std::strerror(errno));
  auto give_up = [&](const char* what) {
    const std::string reason = std::strerror(errno);
    ::close(fd);
    std::remove(tmp.c_str());  // never leave a partial file behind
    fail("{}: {} failed ({})", path, what, reason);
  };
  for (auto [p, n] : parts) {
    while (n > 0) {
      ssize_t w = ::write(fd, p, n);
      if (w < 0) give_up("write");
      p += w;
      n -= static_cast<size_t>(w);
    }
  }
  if (::close(fd) != 0) {  // commit_file syncs it
    const std::string reason = std::strerror(errno);
    std::remove(tmp.c_str());
    fail("{}: write failed ({})", path, reason);
  }
  commit_file(tmp, path);
}

void write_file_atomically(const std::string& path, const std::string& text) {
  write_parts_atomically(path, {{text.data(), text.size()}});
}

}  // namespace sa
