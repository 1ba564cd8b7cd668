#include "data/file_hash.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <vector>

#include "engine/core/error.h"

namespace sa {

uint64_t hash_bytes(uint64_t h, const void* data, size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

uint64_t hash_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  SA_CHECK(f, "{}: cannot open ({})", path, std::strerror(errno));
  std::vector<char> buf(1 << 20);
  uint64_t h = kFnvOffset;
  while (f) {
    f.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    h = hash_bytes(h, buf.data(), static_cast<size_t>(f.gcount()));
  }
  SA_CHECK(f.eof(), "{}: read failed", path);
  return h;
}

}  // namespace sa
