#include "runtime/Threads.h"

#include <omp.h>
#include <sched.h>

#include <cstdlib>
#include <string>

namespace dtnn::runtime {

int defaultThreadCount() {
  if (const char *env = std::getenv("OMP_NUM_THREADS")) {
    char *end = nullptr;
    long n = std::strtol(env, &end, 10);
    if (end != env && (*end == '\0' || *end == ',') && n > 0 && n <= 4096) return int(n);
  }
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  return omp_get_num_procs();
}

void setThreadCount(int threads) { omp_set_num_threads(threads); }

int threadCount() { return omp_get_max_threads(); }

} // namespace dtnn::runtime
