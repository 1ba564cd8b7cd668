// A progress line on stderr for long loops (embedding, pseudo-word evaluation). On a terminal it
// is redrawn in place at most 4 times a second; in a log (stderr not a terminal) it prints a
// plain line every 10 seconds and the last one, so logs stay short and readable.
#pragma once
#include <chrono>
#include <string>

namespace sa {

class ProgressLine {
 public:
  ProgressLine();  // a terminal when stderr is one
  explicit ProgressLine(bool terminal) : tty_(terminal) {}
  // Shows `text` if its interval has passed since the last one shown, or if `last`.
  void update(const std::string& text, bool last = false);

 private:
  bool tty_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point last_shown_;
};

}  // namespace sa
