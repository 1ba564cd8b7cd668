#include "data/progress_line.h"

#include <unistd.h>

#include <cstdio>

namespace sa {

// Every tool's stdout is line-buffered, also into a file or a pipe (a batch job's log, nohup): a
// line is there when it is printed, and a kill loses none. Set when the library loads, before
// anything is written.
[[maybe_unused]] const bool stdout_line_buffered = std::setvbuf(stdout, nullptr, _IOLBF, BUFSIZ) == 0;

ProgressLine::ProgressLine() : tty_(isatty(STDERR_FILENO) != 0) {}

void ProgressLine::update(const std::string& text, bool last) {
  const auto now = std::chrono::steady_clock::now();
  const double interval = tty_ ? 0.25 : 10.0;
  if (!last && shown_ && std::chrono::duration<double>(now - last_shown_).count() < interval) return;
  if (tty_)
    std::fprintf(stderr, "\r%s   %s", text.c_str(), last ? "\n" : "");
  else
    std::fprintf(stderr, "%s\n", text.c_str());
  std::fflush(stderr);
  shown_ = true;
  last_shown_ = now;
}

}  // namespace sa
