#include "data/progress_line.h"

#include <unistd.h>

#include <cstdio>

namespace sa {

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
