// SIGINT and SIGTERM during training: caught, so that a run stops between
// two steps, writes its final checkpoint and exits with a message, instead
// of dying in the middle of writing one (as Caffe snapshots on a signal).
#pragma once

namespace dtnn::runtime {

// Catches SIGINT and SIGTERM while it lives; restores the previous handlers
// after. A second signal takes its default action at once, ending the
// process; the temporary file of a checkpoint it cuts short is removed by the
// next checkpoint written to that path.
class InterruptGuard {
public:
  InterruptGuard();
  ~InterruptGuard();
  InterruptGuard(const InterruptGuard &) = delete;
  InterruptGuard &operator=(const InterruptGuard &) = delete;

  // The signal caught since the guard was made, or 0.
  static int caught();
};

// "SIGINT", "SIGTERM", or "a signal".
const char *signalName(int sig);

} // namespace dtnn::runtime
