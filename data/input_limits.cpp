#include "data/input_limits.h"

#include <filesystem>
#include <system_error>

#include "engine/core/error.h"

namespace sa {

bool read_line(std::istream& in, std::string& line, const std::string& path, int64_t lineno) {
  if (!std::getline(in, line)) return false;
  SA_CHECK(line.size() <= kMaxLineBytes, "{}:{}: a line of {} bytes; lines may hold at most {} bytes", path, lineno,
           line.size(), kMaxLineBytes);
  return true;
}

void check_token_length(std::string_view token, const std::string& path, int64_t lineno) {
  SA_CHECK(token.size() <= kMaxTokenBytes, "{}:{}: a token of {} bytes ('{}...'); tokens may hold at most {} bytes", path,
           lineno, token.size(), token.substr(0, 20), kMaxTokenBytes);
}

void check_file_size(const std::string& path, size_t limit, const char* what) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  SA_CHECK(ec || size <= limit, "{}: {} bytes; a {} may hold at most {} bytes", path, size, what, limit);
}

}  // namespace sa
