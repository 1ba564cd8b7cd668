#include "engine/core/error.h"

#include <charconv>
#include <cstdio>
#include <filesystem>
#include <new>

namespace sa {

void fail_message(const std::string& message) { throw Error(message); }

int tool_failure(const char* tool, const std::exception& e) {
  std::string msg = e.what();
  if (const auto* fe = dynamic_cast<const std::filesystem::filesystem_error*>(&e)) {
    std::string paths = fe->path1().string();
    if (!fe->path2().empty()) paths += " -> " + fe->path2().string();
    msg = paths.empty() ? fe->code().message() : paths + ": " + fe->code().message();
  } else if (dynamic_cast<const std::bad_alloc*>(&e)) {
    msg = "out of memory (" + msg + ")";
  }
  std::fprintf(stderr, "%s: %s\n", tool, msg.c_str());
  return 1;
}

std::string positive_integer(const std::string& value) {
  long long v = 0;
  const char *b = value.data(), *end = b + value.size();
  auto [p, ec] = std::from_chars(b, end, v);
  if (ec == std::errc() && p == end && v >= 1) return "";
  return "must be a positive integer, got " + value;
}

}  // namespace sa
