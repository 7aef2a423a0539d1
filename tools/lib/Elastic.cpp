// The elastic launcher (Elastic.h). Each job is the launcher's command (Open MPI's mpirun)
// with -np and, when it names a hostfile, a hostfile of the nodes that remain. The ranks
// report into a folder of the launcher's (runtime/comm/Elastic.h): rank 0 the checkpoints it
// wrote, a rank whose watchdog ended the job the ranks and nodes that stopped answering.
// What a restart cannot mend (a bad input, a usage error, a loss that is not a number) ends
// the run with that job's status; so do a signal to the launcher, which its job gets too.
#include "tools/lib/Elastic.h"

#include "runtime/comm/Elastic.h"

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

namespace dtnn::cli {

namespace {

volatile sig_atomic_t gChild = 0, gSignal = 0;

extern "C" void forwardSignal(int sig) {
  gSignal = sig;
  if (gChild > 0) kill(static_cast<pid_t>(gChild), sig);
}

std::string quote(const std::string &s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::vector<std::string> words(const std::string &s) {
  std::istringstream in(s);
  std::vector<std::string> w;
  for (std::string t; in >> t;) w.push_back(t);
  return w;
}

// A node of the hostfile: its name and slots (0: not given).
struct Host {
  std::string name;
  int64_t slots = 0;
};

// The hostfile's path among the launcher's words (its index), or -1.
int hostfileArg(const std::vector<std::string> &launcher) {
  for (size_t i = 0; i + 1 < launcher.size(); ++i)
    for (const char *flag : {"--hostfile", "-hostfile", "--machinefile", "-machinefile"})
      if (launcher[i] == flag) return static_cast<int>(i + 1);
  return -1;
}

std::vector<Host> readHostfile(const std::string &path) {
  std::vector<Host> hosts;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> w = words(line.substr(0, line.find('#')));
    if (w.empty()) continue;
    Host h{w[0], 0};
    for (const std::string &t : w)
      if (t.rfind("slots=", 0) == 0) h.slots = std::atoll(t.c_str() + 6);
    hosts.push_back(h);
  }
  return hosts;
}

// Whether a hostfile's name and a rank's host name are one node (either may be qualified).
bool sameNode(const std::string &a, const std::string &b) {
  return a == b || a.substr(0, a.find('.')) == b.substr(0, b.find('.'));
}

int statusOf(int raw) {
  if (WIFEXITED(raw)) return WEXITSTATUS(raw);
  if (WIFSIGNALED(raw)) return 128 + WTERMSIG(raw);
  return 1;
}

// Runs one job and returns its exit status.
int launch(const std::string &command, const std::string &dir) {
  pid_t pid = fork();
  if (pid < 0) {
    std::cerr << "dtnn-run: elastic: error: cannot start the job: " << std::strerror(errno) << "\n";
    return 1;
  }
  if (pid == 0) {
    setenv("DTNN_ELASTIC_DIR", dir.c_str(), 1);
    execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char *>(nullptr));
    _exit(127);
  }
  gChild = pid;
  int raw = 0;
  while (waitpid(pid, &raw, 0) < 0 && errno == EINTR) {
  }
  gChild = 0;
  return statusOf(raw);
}

std::string rankList(const std::vector<int> &ranks) {
  std::string s = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size(); ++i) s += (i ? ", " : "") + std::to_string(ranks[i]);
  return s;
}

std::string plural(int64_t n, const std::string &what) {
  return std::to_string(n) + " " + what + (n == 1 ? "" : "s");
}

} // namespace

void dropOption(std::vector<std::string> &args, const std::string &name, bool hasValue) {
  std::vector<std::string> kept;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == name) {
      if (hasValue) ++i;
      continue;
    }
    if (hasValue && args[i].rfind(name + "=", 0) == 0) continue;
    kept.push_back(args[i]);
  }
  args = std::move(kept);
}

int runElastic(const ElasticOptions &o, std::vector<std::string> args) {
  namespace fs = std::filesystem;
  std::string base = (std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp");
  std::string pattern = base + "/dtnn-elastic.XXXXXX";
  if (!mkdtemp(pattern.data())) {
    std::cerr << "dtnn-run: elastic: error: cannot make a folder in " << base << ": "
              << std::strerror(errno) << "\n";
    return 1;
  }
  const std::string dir = pattern;
  struct sigaction sa {};
  sa.sa_handler = forwardSignal;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &sa, nullptr);

  std::vector<std::string> launcher = words(o.launcher);
  int hostfile = hostfileArg(launcher);
  std::vector<Host> hosts = hostfile >= 0 ? readHostfile(launcher[hostfile]) : std::vector<Host>{};
  int64_t ranks = o.ranks;
  int status = 0;
  for (int64_t restart = 0;; ++restart) {
    for (const fs::directory_entry &e : fs::directory_iterator(dir))
      if (e.path().filename().string().rfind("lost.", 0) == 0) fs::remove(e.path());
    std::string command;
    for (const std::string &w : launcher) command += quote(w) + " ";
    command += "-x DTNN_ELASTIC_DIR -np " + std::to_string(ranks) + " " + quote(o.program);
    for (const std::string &a : args) command += " " + quote(a);
    status = launch(command, dir);
    if (status == 0 || gSignal) break;
    runtime::elastic::Report report = runtime::elastic::readReport(dir);
    // Failures that a restart would repeat: those of the run itself, not of its ranks' peers.
    if (report.reporter < 0 && (status == 1 || status == 2 || status == 3)) break;
    std::string why = "the job of " + plural(ranks, "rank") + " ended with status " +
                      std::to_string(status);
    if (report.reporter < 0)
      why += " and no rank reported a lost peer, so every node remains";
    else {
      why += "; rank " + std::to_string(report.reporter) + " lost " + rankList(report.lostRanks);
      for (size_t i = 0; i < report.lostNodes.size(); ++i)
        why += (i == 0 ? (report.lostNodes.size() == 1 ? " on node " : " on nodes ") : ", ") +
               report.lostNodes[i];
    }
    if (restart == o.maxRestarts) {
      std::cerr << "dtnn-run: elastic: error: " << why << ", after "
                << plural(o.maxRestarts, "restart") << " (--max-restarts); giving up\n";
      break;
    }
    // The ranks that remain: a lost node's slots go with it; a rank lost on a node that
    // remains (or with no hostfile) takes one rank off the job.
    ranks -= static_cast<int64_t>(report.lostRanks.size());
    if (hostfile >= 0 && !report.lostNodes.empty()) {
      std::vector<Host> kept;
      int64_t slots = 0;
      for (const Host &h : hosts) {
        bool lost = false;
        for (const std::string &n : report.lostNodes) lost = lost || sameNode(h.name, n);
        if (lost) continue;
        kept.push_back(h);
        slots += h.slots;
      }
      hosts = std::move(kept);
      std::string path = dir + "/hostfile." + std::to_string(restart + 1);
      std::ofstream out(path);
      for (const Host &h : hosts)
        out << h.name << (h.slots > 0 ? " slots=" + std::to_string(h.slots) : "") << "\n";
      launcher[hostfile] = path;
      bool slotsKnown = true;
      for (const Host &h : hosts) slotsKnown = slotsKnown && h.slots > 0;
      if (slotsKnown) ranks = std::min(ranks, slots);
    }
    if (ranks < 1 || (hostfile >= 0 && hosts.empty())) {
      std::cerr << "dtnn-run: elastic: error: " << why << "; no ranks remain; giving up\n";
      break;
    }
    std::string from = "from the start (no checkpoint was written yet)";
    if (!report.checkpoint.empty()) {
      dropOption(args, "--resume", true);
      dropOption(args, "--init-from", true);
      args.push_back("--resume");
      args.push_back(report.checkpoint);
      from = "from " + report.checkpoint;
    }
    std::cerr << "dtnn-run: elastic: " << why << "; restarting on " << plural(ranks, "rank")
              << " " << from << " (restart " << restart + 1 << " of " << o.maxRestarts << ")\n"
              << std::flush;
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
  return status;
}

} // namespace dtnn::cli
