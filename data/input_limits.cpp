#include "data/input_limits.h"

#include <filesystem>
#include <system_error>

#include "engine/core/error.h"

namespace sa {

// As std::getline, but in chunks, so that a line past the limit fails before it is held whole
// (a file of gigabytes without a newline).
bool read_line(std::istream& in, std::string& line, const std::string& path, int64_t lineno) {
  line.clear();
  char buf[1 << 14];
  for (;;) {
    in.getline(buf, sizeof buf);
    const std::streamsize got = in.gcount();
    bool done = true;
    if (!in.fail()) {  // the newline was read (gcount counts it), or the file ended after text
      line.append(buf, static_cast<size_t>(got - (in.eof() ? 0 : 1)));
    } else if (in.eof() || in.bad()) {  // nothing more to read
      if (line.empty()) return false;
    } else {  // the buffer filled before the newline: the same line goes on
      line.append(buf, static_cast<size_t>(got));
      in.clear(in.rdstate() & ~std::ios::failbit);
      done = false;
    }
    SA_CHECK(line.size() <= kMaxLineBytes, "{}:{}: a line of more than {} bytes; lines may hold at most {} bytes", path,
             lineno, kMaxLineBytes, kMaxLineBytes);
    if (done) return true;
  }
}

void check_token_length(std::string_view token, const std::string& path, int64_t lineno) {
  SA_CHECK(token.size() <= kMaxTokenBytes, "{}:{}: a token of {} bytes ('{}...'); tokens may hold at most {} bytes", path,
           lineno, token.size(), token.substr(0, 20), kMaxTokenBytes);
}

void check_stated_size(const std::string& path, std::initializer_list<int64_t> counts, uint64_t min_bytes_each,
                       const char* what) {
  std::error_code ec;
  const uint64_t size = std::filesystem::file_size(path, ec);
  if (ec) return;  // not a regular file (a pipe): nothing to compare with
  uint64_t need = min_bytes_each;
  for (int64_t c : counts) {
    SA_CHECK(c >= 0 && (c == 0 || need <= size / static_cast<uint64_t>(c)),
             "{}: the {} announces more than the file's {} bytes can hold", path, what, size);
    need *= static_cast<uint64_t>(c);
  }
}

void check_file_size(const std::string& path, size_t limit, const char* what) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  SA_CHECK(ec || size <= limit, "{}: {} bytes; a {} may hold at most {} bytes", path, size, what, limit);
}

}  // namespace sa
