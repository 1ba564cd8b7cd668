// A graceful stop for bin/train: on SIGTERM (what a cluster's scheduler sends before it preempts a
// job) or SIGINT (Ctrl-C) the step in progress finishes, a checkpoint is written and the trainer
// exits; a second signal ends the process at once.
#pragma once

namespace sa {

// Installs the handlers (bin/train, single-process runs: data-parallel ranks would stop at
// different steps and leave the others waiting in a collective).
void install_stop_signals();
// The signal received since, or 0.
int stop_signal();

}  // namespace sa
