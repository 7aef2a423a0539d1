// The handler runs in signal context, so it only reads flags and fixed buffers, and calls
// async-signal-safe functions (write, unlink, _exit). The text of the current StopContext is
// double-buffered: the main thread writes the buffer the handler does not read, then flips.
#include "runtime/train/Interrupt.h"

#include "ir/Output.h"

#include <unistd.h>

#include <csignal>
#include <cstring>

namespace dtnn::runtime {

namespace {

constexpr int kStopSignals[] = {SIGINT,  SIGTERM, SIGHUP,    SIGPIPE, SIGQUIT,
                                SIGUSR1, SIGUSR2, SIGALRM, SIGVTALRM, SIGXCPU};
constexpr size_t kTextBytes = 1024;

volatile std::sig_atomic_t deferring = 0;
volatile std::sig_atomic_t quietForParent = 0;
volatile std::sig_atomic_t caughtSignal = 0;
volatile std::sig_atomic_t pipeGone = 0;
char prefix[128] = "dtnn";
char contexts[2][kTextBytes];
volatile std::sig_atomic_t currentContext = 0;
std::string contextText; // what contexts[currentContext] holds, for StopContext to restore

void setContext(const std::string &text) {
  int next = 1 - currentContext;
  size_t n = std::min(text.size(), kTextBytes - 1);
  std::memcpy(contexts[next], text.data(), n);
  contexts[next][n] = '\0';
  currentContext = next;
  contextText = text.substr(0, n);
}

// Appends the C string `s` to buf at pos, within `size`.
void put(char *buf, size_t size, size_t &pos, const char *s) {
  while (*s && pos + 1 < size) buf[pos++] = *s++;
}

void onSignal(int sig, siginfo_t *info, void *) {
  // Once the reader of the output has gone, every later write to it raises SIGPIPE again: the
  // first said what there was to say.
  if (sig == SIGPIPE && pipeGone) return;
  if (sig == SIGPIPE) pipeGone = 1;
  if (deferring && !caughtSignal) {
    caughtSignal = sig;
    return;
  }
  abandonOutputInProgress();
  if (!deferring && quietForParent && info && info->si_pid == ::getppid()) ::_exit(128 + sig);
  char msg[kTextBytes + 256];
  size_t pos = 0;
  put(msg, sizeof msg, pos, prefix);
  put(msg, sizeof msg, pos, deferring ? ": error: a second " : ": error: interrupted by ");
  put(msg, sizeof msg, pos, signalName(sig));
  put(msg, sizeof msg, pos, deferring ? " ended the run at once" : " ");
  put(msg, sizeof msg, pos, contexts[currentContext]);
  put(msg, sizeof msg, pos, "\n");
  ssize_t ignored = ::write(STDERR_FILENO, msg, pos);
  (void)ignored;
  ::_exit(128 + sig);
}

} // namespace

void installStopSignals(const char *prefixText, bool launcherEndsJobs) {
  std::strncpy(prefix, prefixText, sizeof prefix - 1);
  quietForParent = launcherEndsJobs;
  if (contextText.empty()) setContext("before training began; nothing was trained, so nothing is saved");
  struct sigaction sa {};
  sa.sa_sigaction = onSignal;
  sigemptyset(&sa.sa_mask);
  for (int sig : kStopSignals) sigaddset(&sa.sa_mask, sig);
  sa.sa_flags = SA_RESTART | SA_SIGINFO;
  for (int sig : kStopSignals) sigaction(sig, &sa, nullptr);
  std::signal(SIGXFSZ, SIG_IGN);
}

StopContext::StopContext(const std::string &doing) : previous_(contextText) { setContext(doing); }

StopContext::~StopContext() { setContext(previous_); }

StopBetweenSteps::StopBetweenSteps() {
  caughtSignal = 0;
  deferring = 1;
}

StopBetweenSteps::~StopBetweenSteps() { deferring = 0; }

int StopBetweenSteps::caught() { return caughtSignal; }

const char *signalName(int sig) {
  switch (sig) {
  case SIGINT: return "SIGINT";
  case SIGTERM: return "SIGTERM";
  case SIGHUP: return "SIGHUP";
  case SIGPIPE: return "SIGPIPE";
  case SIGQUIT: return "SIGQUIT";
  case SIGUSR1: return "SIGUSR1";
  case SIGUSR2: return "SIGUSR2";
  case SIGALRM: return "SIGALRM";
  case SIGVTALRM: return "SIGVTALRM";
  case SIGXCPU: return "SIGXCPU";
  default: return "a signal";
  }
}

} // namespace dtnn::runtime
