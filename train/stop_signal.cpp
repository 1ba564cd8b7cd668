#include "train/stop_signal.h"

#include <unistd.h>

#include <csignal>
#include <cstring>

namespace sa {
namespace {

volatile std::sig_atomic_t g_signal = 0;

void on_signal(int sig) {
  if (g_signal != 0) {  // the second one: the default action, now
    std::signal(sig, SIG_DFL);
    std::raise(sig);
    return;
  }
  g_signal = sig;
  // Only async-signal-safe calls here: write(2), not stdio.
  const char* msg = sig == SIGINT ? "\ntrain: interrupted: finishing this step, then writing a checkpoint (again to stop at once)\n"
                                  : "\ntrain: SIGTERM: finishing this step, then writing a checkpoint (again to stop at once)\n";
  [[maybe_unused]] ssize_t n = ::write(STDERR_FILENO, msg, std::strlen(msg));
}

}  // namespace

void install_stop_signals() {
  struct sigaction sa = {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;  // reads and writes in progress go on; the loop checks between steps
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
}

int stop_signal() { return g_signal; }

}  // namespace sa
