// Errors: every failure is an sa::Error whose message says which op or call failed and why.
#pragma once
#include <fmt/format.h>
#include <stdexcept>
#include <string>

namespace sa {

struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// For code that cannot include fmt (CUDA translation units).
[[noreturn]] void fail_message(const std::string& message);

template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> f, Args&&... args) {
  throw Error(fmt::format(f, std::forward<Args>(args)...));
}

// The end of a command-line tool: prints "TOOL: MESSAGE" on stderr and returns the exit code 1.
// A std::filesystem_error prints "PATH: REASON" (its what() is the library's wording, and an
// uncaught one aborts with rc 134); any other exception prints its what().
int tool_failure(const char* tool, const std::exception& e);

// A CLI11 check for counts such as --batch-size (CLI::PositiveNumber says "Value 0 not in range
// 0.000000 to 1.79e308"): "" for an integer >= 1, else "must be a positive integer, got VALUE".
std::string positive_integer(const std::string& value);

}  // namespace sa

// SA_CHECK(cond, "fmt", args...): throws sa::Error with the formatted message when cond is false.
#define SA_CHECK(cond, ...)          \
  do {                               \
    if (!(cond)) ::sa::fail(__VA_ARGS__); \
  } while (0)
