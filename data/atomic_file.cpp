#include "data/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "engine/core/error.h"

namespace sa {

void write_parts_atomically(const std::string& path, const std::vector<std::pair<const char*, size_t>>& parts) {
  std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  SA_CHECK(fd >= 0, "{}: cannot write ({})", tmp, std::strerror(errno));
  for (auto [p, n] : parts) {
    while (n > 0) {
      ssize_t w = ::write(fd, p, n);
      if (w < 0) {
        ::close(fd);
        fail("{}: write failed ({})", tmp, std::strerror(errno));
      }
      p += w;
      n -= static_cast<size_t>(w);
    }
  }
  bool ok = ::fsync(fd) == 0;
  ok = ::close(fd) == 0 && ok;
  SA_CHECK(ok, "{}: write failed ({})", tmp, std::strerror(errno));
  SA_CHECK(std::rename(tmp.c_str(), path.c_str()) == 0, "{}: cannot rename into place ({})", path, std::strerror(errno));
}

void write_file_atomically(const std::string& path, const std::string& text) {
  write_parts_atomically(path, {{text.data(), text.size()}});
}

}  // namespace sa
