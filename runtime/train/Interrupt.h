// The signals that stop a run: SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGQUIT,
// SIGUSR1, SIGUSR2, SIGALRM, SIGVTALRM and SIGXCPU (a terminal closing, a
// reader of the output gone, a scheduler's warning, a CPU-time limit). Each
// either lets the run save and say where it stopped, or ends it at once and
// says why nothing was saved; none ends it silently. SIGXFSZ is ignored, so
// that a write past the file-size limit fails with EFBIG and is reported.
//
// Outside training a stop signal ends the process at once with a message
// (nothing has been trained, so nothing is lost). While a StopBetweenSteps
// lives, the first one is recorded and the run stops between two steps,
// writes its checkpoint and exits with 128 + the signal, as a shell reports
// one. A second one ends the process at once: the temporary file of a
// checkpoint being written is removed, so that no partial file is left.
#pragma once

#include <string>

namespace dtnn::runtime {

// Installs the handlers for the stop signals and ignores SIGXFSZ; `prefix`
// starts the messages ("dtnn-run", "dtnn-run: rank 1"). Call early in main,
// and again to change the prefix. With `launcherEndsJobs` (under mpirun), a
// signal the parent process sends outside training ends the process
// quietly: the launcher ends a job that way when another rank failed, and
// that rank and the launcher say why.
void installStopSignals(const char *prefix, bool launcherEndsJobs = false);

// What the process is doing, for the message of a signal that ends it at
// once: "before training began; nothing was trained, so nothing is saved".
// Restores the previous text when it goes.
class StopContext {
public:
  explicit StopContext(const std::string &doing);
  ~StopContext();
  StopContext(const StopContext &) = delete;
  StopContext &operator=(const StopContext &) = delete;

private:
  std::string previous_;
};

// While it lives, the first stop signal is recorded, not acted on.
class StopBetweenSteps {
public:
  StopBetweenSteps();
  ~StopBetweenSteps();
  StopBetweenSteps(const StopBetweenSteps &) = delete;
  StopBetweenSteps &operator=(const StopBetweenSteps &) = delete;

  // The signal recorded, or 0.
  static int caught();
};

// "SIGINT", "SIGTERM", ..., or "a signal".
const char *signalName(int sig);

} // namespace dtnn::runtime
