#include "runtime/Threads.h"

#include <omp.h>
#include <limits.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace dtnn::runtime {

namespace {

// Busy and total jiffies of each CPU, from /proc/stat ("cpuN user nice
// system idle iowait irq softirq steal ..."); empty when unreadable.
std::map<int, std::pair<long long, long long>> cpuTimes() {
  std::map<int, std::pair<long long, long long>> out;
  std::ifstream in("/proc/stat");
  for (std::string line; std::getline(in, line);) {
    if (line.size() < 4 || line.compare(0, 3, "cpu") != 0 || line[3] < '0' || line[3] > '9')
      continue;
    std::istringstream fields(line.substr(3));
    int cpu = 0;
    fields >> cpu;
    long long v = 0, total = 0, idle = 0;
    for (int i = 0; fields >> v; ++i) {
      if (i >= 8) break; // guest times are counted in user already
      total += v;
      if (i == 3 || i == 4) idle += v; // idle, iowait
    }
    out[cpu] = {total - idle, total};
  }
  return out;
}

// The CPUs of `cpus` (indices) that were busy at least half of `seconds`.
int busyCpus(const std::vector<int> &cpus, double seconds) {
  auto before = cpuTimes();
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  auto after = cpuTimes();
  int busy = 0;
  for (int cpu : cpus) {
    auto b = before.find(cpu), a = after.find(cpu);
    if (b == before.end() || a == after.end()) continue;
    long long used = a->second.first - b->second.first;
    long long total = a->second.second - b->second.second;
    if (total > 0 && 2 * used >= total) ++busy;
  }
  return busy;
}

// The ranks of this job on this machine (Open MPI's, or a PMI launcher's count) that share the
// `cpus` CPUs of this one: none besides it when each is bound to CPUs of its own, all of them
// when none is bound.
int localSharers(int cpus) {
  int local = 1;
  for (const char *v : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"})
    if (const char *text = std::getenv(v)) {
      local = std::max(1, std::atoi(text));
      break;
    }
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  if (local == 1 || online < 1) return 1;
  long sharing = (long(local) * cpus + online - 1) / online;
  return int(std::clamp<long>(sharing, 1, local));
}

// The CPUs this process may run on (its affinity mask), in a ThreadChoice.
std::vector<int> affinityCpus() {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    for (int i = 0; i < CPU_SETSIZE; ++i)
      if (CPU_ISSET(i, &set)) cpus.push_back(i);
  return cpus;
}

// The CPUs, those other processes keep busy (sampled, unless `sample` is false) and the ranks
// sharing them.
ThreadChoice measure(bool sample) {
  ThreadChoice c;
  std::vector<int> cpus = affinityCpus();
  c.cpus = cpus.empty() ? omp_get_num_procs() : static_cast<int>(cpus.size());
  // With one CPU there is nothing to choose.
  c.busy = sample && c.cpus > 1 && !cpus.empty() ? busyCpus(cpus, 0.05) : 0;
  c.sharers = localSharers(c.cpus);
  return c;
}

// OMP_NUM_THREADS as a count, or 0.
int threadsFromEnv() {
  const char *env = std::getenv("OMP_NUM_THREADS");
  if (!env) return 0;
  char *end = nullptr;
  long n = std::strtol(env, &end, 10);
  return end != env && (*end == '\0' || *end == ',') && n > 0 && n <= 4096 ? int(n) : 0;
}

ThreadChoice choose() {
  if (int n = threadsFromEnv()) {
    ThreadChoice c;
    c.threads = c.cpus = n;
    c.fromEnv = true;
    return c;
  }
  ThreadChoice c = measure(true);
  c.threads = std::max(1, (c.cpus - c.busy) / c.sharers);
  return c;
}

} // namespace


static std::optional<ThreadChoice> &cachedChoice() {
  static std::optional<ThreadChoice> c;
  return c;
}

const ThreadChoice &defaultThreadChoice() {
  if (!cachedChoice()) cachedChoice() = choose();
  return *cachedChoice();
}

const ThreadChoice *defaultThreadChoiceIfMade() {
  return cachedChoice() ? &*cachedChoice() : nullptr;
}

int defaultThreadCount() { return defaultThreadChoice().threads; }

void setThreadCount(int threads) { omp_set_num_threads(threads); }

int threadCount() { return omp_get_max_threads(); }

int affinityCpuCount() { return measure(false).cpus; }

namespace {
constexpr const char *kReasonVariable = "DTNN_PASSIVE_WAIT_REASON";
} // namespace

void waitPassivelyIfOversubscribed(char **argv, int threads) {
  if (std::getenv("OMP_WAIT_POLICY") || std::getenv("GOMP_SPINCOUNT")) return;
  int t = threads > 0 ? threads : threadsFromEnv();
  // The default count fits the free CPUs by itself; a team of one thread has no barrier to
  // wait at.
  if (t <= 1) return;
  ThreadChoice c = measure(true);
  int free = std::max(1, c.cpus - c.busy);
  if (t * c.sharers <= free) return;
  std::string reason = std::to_string(t * c.sharers) + " threads" +
                       (c.sharers > 1 ? " of " + std::to_string(c.sharers) + " ranks" : "") +
                       " on " + std::to_string(free) + (free == 1 ? " free CPU" : " free CPUs");
  setenv("OMP_WAIT_POLICY", "passive", 1);
  setenv(kReasonVariable, reason.c_str(), 1);
  // The program's own path, so that the process keeps its name (ps, pgrep).
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n > 0) {
    self[n] = '\0';
    execv(self, argv);
  }
  // Not re-executed: the run goes on as it is.
  unsetenv("OMP_WAIT_POLICY");
  unsetenv(kReasonVariable);
}

std::string passiveWaitReason() {
  const char *r = std::getenv(kReasonVariable);
  const char *policy = std::getenv("OMP_WAIT_POLICY");
  return r && policy && std::string(policy) == "passive" ? r : "";
}

void startThreadPool() {
#pragma omp parallel
  {
  }
}

} // namespace dtnn::runtime
