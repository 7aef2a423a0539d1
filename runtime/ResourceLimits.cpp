#include "runtime/ResourceLimits.h"

#include "runtime/HostMemory.h"

#include <malloc.h>
#include <pthread.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace dtnn::runtime {

void keepMallocInOneArena() {
  if (addressSpaceLimit() != UINT64_MAX) mallopt(M_ARENA_MAX, 1);
}

uint64_t addressSpaceLimit() {
  rlimit rl{};
  if (getrlimit(RLIMIT_AS, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return UINT64_MAX;
  return rl.rlim_cur;
}

uint64_t threadStackBytes() {
  pthread_attr_t attr;
  size_t bytes = 0;
  if (pthread_getattr_default_np(&attr) == 0) {
    pthread_attr_getstacksize(&attr, &bytes);
    pthread_attr_destroy(&attr);
  }
  // glibc's own default when the stack limit is unlimited.
  return bytes ? bytes : uint64_t(2) << 20;
}

uint64_t parseOpenmpStackSize(const std::string &text) {
  size_t i = 0;
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  uint64_t n = 0;
  size_t digits = 0;
  for (; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])); ++i, ++digits) {
    if (n > (uint64_t(1) << 40)) return 0;
    n = n * 10 + uint64_t(text[i] - '0');
  }
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  if (!digits) return 0;
  int shift = 10;
  if (i < text.size()) {
    switch (std::toupper(static_cast<unsigned char>(text[i]))) {
    case 'B': shift = 0; break;
    case 'K': shift = 10; break;
    case 'M': shift = 20; break;
    case 'G': shift = 30; break;
    default: return 0;
    }
    ++i;
  }
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  return i == text.size() && n <= (UINT64_MAX >> shift) ? n << shift : 0;
}

uint64_t openmpStackBytes() {
  for (const char *name : {"GOMP_STACKSIZE", "OMP_STACKSIZE"})
    if (const char *v = std::getenv(name))
      if (uint64_t bytes = parseOpenmpStackSize(v)) return bytes;
  return threadStackBytes();
}

void SpaceNeed::add(std::string what, uint64_t bytes) {
  if (bytes) parts.push_back({std::move(what), bytes});
}

uint64_t SpaceNeed::total() const {
  uint64_t sum = 0;
  for (const SpacePart &p : parts) sum += p.bytes;
  return sum;
}

std::string SpaceNeed::str() const {
  std::string text;
  for (const SpacePart &p : parts)
    text += (text.empty() ? "" : ", ") + formatBytes(p.bytes) + " for " + p.what;
  return text;
}

MappingLimit mappingLimit() {
  MappingLimit tightest;
  struct Kind {
    int resource;
    const char *name;
    uint64_t (*used)();
  };
  for (Kind k : {Kind{RLIMIT_AS, "the address-space limit (ulimit -v)", mappedBytes},
                 Kind{RLIMIT_DATA, "the data limit (ulimit -d)", dataBytes}}) {
    rlimit rl{};
    if (getrlimit(k.resource, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) continue;
    uint64_t used = k.used(), limit = rl.rlim_cur;
    uint64_t left = used < limit ? limit - used : 0;
    if (tightest.limit == UINT64_MAX || left < tightest.left) tightest = {k.name, limit, left};
  }
  return tightest;
}

Error checkAddressSpace(const SpaceNeed &need, const MappingLimit &limit,
                        const std::string &advice, uint64_t margin) {
  if (limit.limit == UINT64_MAX) return Error::success();
  uint64_t total = need.total() + margin, left = limit.left;
  if (total <= left) return Error::success();
  std::string parts = need.str();
  return Error::make(need.who + " needs " + formatBytes(total) + " of address space (" + parts +
                     (parts.empty() ? "" : ", and ") + formatBytes(margin) +
                     " kept free for the libraries), but " + limit.name + " of " +
                     formatBytes(limit.limit) + " leaves " + formatBytes(left) + " beside the " +
                     formatBytes(limit.limit > left ? limit.limit - left : 0) + " in use" +
                     (need.note.empty() ? "" : " (" + need.note + ")") + "; raise the limit" +
                     (advice.empty() ? "" : ", " + advice));
}

Error checkAddressSpace(const SpaceNeed &need, const std::string &advice, uint64_t margin) {
  return checkAddressSpace(need, mappingLimit(), advice, margin);
}

uint64_t threadsLeft() {
  rlimit rl{};
  if (getrlimit(RLIMIT_NPROC, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY || getuid() == 0)
    return UINT64_MAX;
  uint64_t used = 0;
  std::error_code ec;
  auto digit = [](unsigned char c) { return std::isdigit(c) != 0; };
  for (std::filesystem::directory_iterator it("/proc", ec), end; !ec && it != end; it.increment(ec)) {
    const std::string pid = it->path().filename().string();
    if (pid.empty() || !std::all_of(pid.begin(), pid.end(), digit)) continue;
    std::ifstream status(it->path() / "status");
    uint64_t threads = 0;
    bool mine = false;
    for (std::string line; std::getline(status, line);) {
      if (line.rfind("Uid:", 0) == 0) mine = std::strtoull(line.c_str() + 4, nullptr, 10) == getuid();
      if (line.rfind("Threads:", 0) == 0) threads = std::strtoull(line.c_str() + 8, nullptr, 10);
    }
    if (mine) used += threads;
  }
  return used < rl.rlim_cur ? rl.rlim_cur - used : 0;
}

Error checkThreadRoom(int poolThreads, int otherThreads) {
  int pool = poolThreads > 1 ? poolThreads - 1 : 0;
  std::string advice = poolThreads > 1 ? "or use fewer --threads" : "";
  uint64_t threads = uint64_t(pool) + uint64_t(otherThreads);
  rlimit rl{};
  if (uint64_t left = threadsLeft(); left < threads && getrlimit(RLIMIT_NPROC, &rl) == 0)
    return Error::make("starting the run's threads needs " + std::to_string(threads) +
                       " more threads (" + std::to_string(pool) + " of the thread pool, " +
                       std::to_string(otherThreads) + " for the data loaders and queues), but "
                       "the limit of processes (ulimit -u) of " + std::to_string(rl.rlim_cur) +
                       " leaves this user " + std::to_string(left) + "; raise the limit" +
                       (advice.empty() ? "" : ", " + advice));
  SpaceNeed need{"starting the run's threads", {}};
  need.add(std::to_string(pool) + (pool == 1 ? " stack" : " stacks") + " of the thread pool",
           uint64_t(pool) * openmpStackBytes());
  need.add(std::to_string(otherThreads) + (otherThreads == 1 ? " stack" : " stacks") +
               " of the data loaders and queues",
           uint64_t(otherThreads) * threadStackBytes());
  return checkAddressSpace(need, advice);
}

uint64_t openFilesLeft() {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return UINT64_MAX;
  // Listing the folder takes a descriptor itself; without one, none is left.
  uint64_t open = 0;
  std::error_code ec;
  std::filesystem::directory_iterator it("/proc/self/fd", ec), end;
  if (ec) return 0;
  for (; !ec && it != end; it.increment(ec)) ++open;
  open = open > 0 ? open - 1 : 0;
  return open < rl.rlim_cur ? rl.rlim_cur - open : 0;
}

Error checkOpenFiles(uint64_t files, const std::string &who) {
  uint64_t left = openFilesLeft();
  if (left >= files) return Error::success();
  rlimit rl{};
  getrlimit(RLIMIT_NOFILE, &rl);
  return Error::make(who + " needs " + std::to_string(files) + " more open files, but the "
                     "open-file limit (ulimit -n) of " + std::to_string(rl.rlim_cur) +
                     " leaves " + std::to_string(left) + "; raise the limit");
}

} // namespace dtnn::runtime
