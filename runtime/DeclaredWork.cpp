#include "runtime/DeclaredWork.h"

#include "ir/Output.h"
#include "runtime/Queue.h"

#include <atomic>
#include <mutex>
#include <vector>

namespace dtnn::runtime {

namespace {

struct Registry {
  std::mutex mutex;
  std::vector<DeclaredWork::State> stack;
  std::atomic<uint64_t> advanced{0};
};

Registry &registry() {
  static Registry r;
  return r;
}

} // namespace

DeclaredWork::DeclaredWork(std::string what) {
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.stack.push_back({std::move(what), 0, monotonicSeconds()});
}

DeclaredWork::~DeclaredWork() {
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.stack.pop_back();
}

void DeclaredWork::advance(uint64_t units) { registry().advanced += units; }

std::optional<DeclaredWork::State> DeclaredWork::current() {
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  if (r.stack.empty()) return std::nullopt;
  State s = r.stack.back();
  s.progress = outputBytesWritten() + r.advanced.load();
  return s;
}

} // namespace dtnn::runtime
