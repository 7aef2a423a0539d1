// The backend interface: a backend owns memory in one memory space, queues
// to launch work on, layout conversions between its own layouts and plain
// ones, and kernels it registers in the kernel registry
// (runtime/KernelRegistry.h). Backends register themselves by name in the
// backend registry (runtime/BackendRegistry.h).
#pragma once

#include "ir/Error.h"
#include "runtime/Kernel.h"
#include "runtime/Layout.h"
#include "runtime/Queue.h"

#include <memory>
#include <string>
#include <string_view>

namespace dtnn::runtime {

struct BackendOptions {
  int threads = 0; // 0: the default (runtime/Threads.h)
  // Where a backend that compiles kernels keeps them across runs
  // (`--jit-cache`): a folder, "off" for nowhere, "" for the backend's
  // default.
  std::string kernelCache;
};

class Backend {
public:
  virtual ~Backend();
  // The name users select it by: `dtnn-run --backend NAME`.
  virtual std::string_view name() const = 0;
  // What the backend did in this process that a profile should tell (the
  // jit: kernels compiled and loaded from its cache); "" when nothing.
  virtual std::string summary() const { return {}; }
  virtual MemorySpace memorySpace() const { return MemorySpace::Host; }

  // Memory, zero-filled on allocation. Throws std::bad_alloc when refused.
  virtual void *allocate(size_t bytes) = 0;
  virtual void release(void *p) = 0;
  // Bytes of memory the backend allocates from, or 0 when unknown; runs that
  // would need more are refused before they start.
  virtual uint64_t memoryBytes() const { return 0; }
  virtual void copyToDevice(void *dst, const void *src, size_t bytes) = 0;
  virtual void copyToHost(void *dst, const void *src, size_t bytes) = 0;

  // The queue its kernels compute on, and one that copies inputs in while
  // kernels run.
  virtual Queue &computeQueue() = 0;
  virtual Queue &copyQueue() = 0;

  // A kernel converting a buffer from one layout to another, where one of
  // them is this backend's own; an error when it cannot.
  virtual Expected<std::unique_ptr<Kernel>> makeConversion(const BufferDesc &from,
                                                           const BufferDesc &to);
  // Waits until the work launched on its queues so far has finished.
  virtual Error synchronize();
};

// Whose memory a size check is about: "the onednn backend".
std::string memoryOwner(const Backend &backend);

// A backend in host memory that computes on the calling thread: memory from
// the host allocator and an inline compute queue.
class HostBackend : public Backend {
public:
  HostBackend();
  ~HostBackend() override;
  void *allocate(size_t bytes) override;
  void release(void *p) override;
  uint64_t memoryBytes() const override;
  void copyToDevice(void *dst, const void *src, size_t bytes) override;
  void copyToHost(void *dst, const void *src, size_t bytes) override;
  Queue &computeQueue() override { return *compute_; }
  Queue &copyQueue() override { return *copy_; }

private:
  std::unique_ptr<Queue> compute_, copy_;
};

} // namespace dtnn::runtime
