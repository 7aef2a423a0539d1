#include "runtime/Threads.h"

#include <omp.h>
#include <sched.h>

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

ThreadChoice choose() {
  ThreadChoice c;
  if (const char *env = std::getenv("OMP_NUM_THREADS")) {
    char *end = nullptr;
    long n = std::strtol(env, &end, 10);
    if (end != env && (*end == '\0' || *end == ',') && n > 0 && n <= 4096) {
      c.threads = c.cpus = int(n);
      c.fromEnv = true;
      return c;
    }
  }
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    for (int i = 0; i < CPU_SETSIZE; ++i)
      if (CPU_ISSET(i, &set)) cpus.push_back(i);
  c.cpus = cpus.empty() ? omp_get_num_procs() : static_cast<int>(cpus.size());
  // With one CPU there is nothing to choose.
  c.busy = c.cpus > 1 && !cpus.empty() ? busyCpus(cpus, 0.05) : 0;
  c.threads = std::max(1, c.cpus - c.busy);
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

void startThreadPool() {
#pragma omp parallel
  {
  }
}

} // namespace dtnn::runtime
