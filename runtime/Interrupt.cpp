#include "runtime/Interrupt.h"

#include <csignal>

namespace dtnn::runtime {

namespace {

volatile std::sig_atomic_t caughtSignal = 0;
struct sigaction previousInt, previousTerm;

void onSignal(int sig) { caughtSignal = sig; }

} // namespace

InterruptGuard::InterruptGuard() {
  caughtSignal = 0;
  struct sigaction sa {};
  sa.sa_handler = onSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESETHAND; // the second signal is not caught
  sigaction(SIGINT, &sa, &previousInt);
  sigaction(SIGTERM, &sa, &previousTerm);
}

InterruptGuard::~InterruptGuard() {
  sigaction(SIGINT, &previousInt, nullptr);
  sigaction(SIGTERM, &previousTerm, nullptr);
}

int InterruptGuard::caught() { return caughtSignal; }

const char *signalName(int sig) {
  switch (sig) {
  case SIGINT: return "SIGINT";
  case SIGTERM: return "SIGTERM";
  default: return "a signal";
  }
}

} // namespace dtnn::runtime
