#include "runtime/Backend.h"

#include "runtime/HostMemory.h"

#include <cstdlib>
#include <cstring>

namespace dtnn::runtime {

Backend::~Backend() = default;

Expected<std::unique_ptr<Kernel>> Backend::makeConversion(const BufferDesc &from,
                                                          const BufferDesc &to) {
  return Error::make("the " + std::string(name()) + " backend cannot convert " + from.str() +
                     " to " + to.str());
}

Error Backend::synchronize() {
  Error e = computeQueue().synchronize();
  Error c = copyQueue().synchronize();
  if (!e) return c;
  consumeError(std::move(c)); // the compute queue's failure is the one reported
  return e;
}

void *Backend::allocateHost(size_t bytes) { return allocateHostZeroed(bytes); }
void Backend::releaseHost(void *p) { std::free(p); }

void Backend::copyToDeviceOn(Queue &queue, void *dst, const void *src, size_t bytes) {
  queue.submit([this, dst, src, bytes] {
    copyToDevice(dst, src, bytes);
    return Error::success();
  });
}

CapturedRun::~CapturedRun() = default;

Expected<std::unique_ptr<CapturedRun>> Backend::capture(Queue &, const std::function<Error()> &) {
  return Error::make("the " + std::string(name()) + " backend cannot record its work for replay");
}

std::string memoryOwner(const Backend &backend) {
  return "the " + std::string(backend.name()) + " backend";
}

HostBackend::HostBackend()
    : compute_(makeInlineQueue("compute")), copy_(makeThreadQueue("copy")) {}

HostBackend::~HostBackend() = default;

void *HostBackend::allocate(size_t bytes) { return allocateHostZeroed(bytes); }
void HostBackend::release(void *p) { std::free(p); }
uint64_t HostBackend::memoryBytes() const { return hostMemoryBytes(); }

void HostBackend::copyToDevice(void *dst, const void *src, size_t bytes) {
  std::memcpy(dst, src, bytes);
}

void HostBackend::copyToHost(void *dst, const void *src, size_t bytes) {
  std::memcpy(dst, src, bytes);
}

} // namespace dtnn::runtime
