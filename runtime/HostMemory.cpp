#include "runtime/HostMemory.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <new>
#include <string>

namespace dtnn::runtime {

namespace {

// The limit of a cgroup v2 or v1 memory controller file, or 0 when there is
// none ("max" or an absent file).
uint64_t cgroupLimit(const char *path) {
  std::ifstream in(path);
  std::string text;
  if (!(in >> text) || text == "max") return 0;
  char *end = nullptr;
  unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  return *end == '\0' ? v : 0;
}

} // namespace

void *allocateHostZeroed(size_t bytes) {
  size_t rounded = bytes > SIZE_MAX - 63 ? 0 : (bytes + 63) / 64 * 64;
  if (bytes && !rounded) throw std::bad_alloc();
  if (!rounded) rounded = 64;
  void *p = std::aligned_alloc(64, rounded);
  if (!p) throw std::bad_alloc();
  std::memset(p, 0, rounded);
  return p;
}

uint64_t hostMemoryBytes() {
  long pages = sysconf(_SC_PHYS_PAGES), pageSize = sysconf(_SC_PAGE_SIZE);
  uint64_t limit = pages > 0 && pageSize > 0 ? uint64_t(pages) * uint64_t(pageSize) : UINT64_MAX;
  for (const char *path : {"/sys/fs/cgroup/memory.max",
                           "/sys/fs/cgroup/memory/memory.limit_in_bytes"})
    if (uint64_t v = cgroupLimit(path)) limit = std::min(limit, v);
  for (int resource : {RLIMIT_AS, RLIMIT_DATA}) {
    rlimit rl{};
    if (getrlimit(resource, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
      limit = std::min(limit, uint64_t(rl.rlim_cur));
  }
  return std::max<uint64_t>(limit, 1);
}

namespace {

// A "Vm...:" figure of /proc/self/status in bytes; 0 when unreadable.
uint64_t statusBytes(const std::string &key) {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind(key, 0) == 0) return std::strtoull(line.c_str() + key.size(), nullptr, 10) * 1024;
  return 0;
}

} // namespace

uint64_t mappedBytes() { return statusBytes("VmSize:"); }

uint64_t dataBytes() { return statusBytes("VmData:"); }

uint64_t addressSpaceLeft() {
  rlimit rl{};
  if (getrlimit(RLIMIT_AS, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return UINT64_MAX;
  uint64_t mapped = mappedBytes();
  return mapped < rl.rlim_cur ? rl.rlim_cur - mapped : 0;
}

std::string formatBytes(uint64_t bytes) {
  if (bytes < 1024) return std::to_string(bytes) + " B";
  const char *units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = double(bytes) / 1024;
  size_t u = 0;
  while (v >= 1024 && u + 1 < std::size(units)) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
  return buf;
}

Error checkFits(uint64_t bytes, uint64_t capacity, const std::string &what,
                const std::string &where) {
  if (capacity == 0 || bytes <= capacity) return Error::success();
  return Error::make(what + " " + formatBytes(bytes) + ", more than the " +
                     formatBytes(capacity) + " of memory of " + where);
}

} // namespace dtnn::runtime
