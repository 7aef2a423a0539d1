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
#include "runtime/StepGraph.h"

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dtnn::runtime {

struct BackendOptions {
  int threads = 0; // 0: the default (runtime/Threads.h)
  // Plans only (dtnnc): a device backend then starts no device.
  bool planOnly = false;
  // Where a device backend may round float32 operands to TF32: "conv" (PyTorch's defaults),
  // "all", or "off" (strict float32).
  std::string tf32 = "conv";
  // Only kernels and algorithms that give the same bits on every run.
  bool deterministic = false;
  // The device a device backend runs on.
  int device = 0;
  // Under a launcher: the rank's place among its node's ranks, which picks its device (mod the
  // devices) instead of `device`; -1 for `device`.
  int localRank = -1;
  // How a device backend reduces gradients between ranks: "nccl" (on the device), "mpi" (host
  // copies, for ranks that share a device), or "auto": nccl unless this node has more ranks
  // (ranksOnNode) than devices.
  std::string collectives = "nccl";
  int ranksOnNode = 1;
  // How long a reduction may be in flight before the job ends (--comm-timeout).
  double commTimeoutSeconds = 60;
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
  // Makes the backend ready to run kernels: a device backend starts its
  // device here, and fails with why it cannot. Plans need no start.
  virtual Error start() { return Error::success(); }
  // Whether its kernels compute element type `t` at speed here: success, with `warning` set
  // where they run but slowly (bf16 emulated), or a failure saying why a run should not (bf16
  // below AVX-512). Called once before the first plan; the default takes every type.
  virtual Error checkPrecision(ir::DType t, std::string &warning) {
    (void)t, (void)warning;
    return Error::success();
  }

  // A backend that reduces gradients in its own memory (NCCL on a GPU): the fastest of
  // `repeats` allreduces of f32 sums over `comm`'s ranks, {bytes, seconds} for sizes from
  // 4 KiB to `maxBytes` by 4x, every rank getting rank 0's figures (dtnn-run --calibrate).
  // Fails for a backend whose reductions are the host communicator's.
  virtual Expected<std::vector<std::pair<double, double>>>
  timeAllreduces(Communicator &comm, double maxBytes, int repeats) {
    (void)comm, (void)maxBytes, (void)repeats;
    return Error::make("the " + std::string(name()) + " backend reduces through the host");
  }

  // Memory, zero-filled on allocation. Throws std::bad_alloc when refused.
  virtual void *allocate(size_t bytes) = 0;
  virtual void release(void *p) = 0;
  // Bytes of memory the backend allocates from, or 0 when unknown; runs that
  // would need more are refused before they start.
  virtual uint64_t memoryBytes() const { return 0; }
  virtual void copyToDevice(void *dst, const void *src, size_t bytes) = 0;
  virtual void copyToHost(void *dst, const void *src, size_t bytes) = 0;
  // Host memory that copies to and from the backend's memory run from
  // without the host waiting (pinned, for a device), zero-filled; plain host
  // memory for host backends. Throws std::bad_alloc when refused.
  virtual void *allocateHost(size_t bytes);
  virtual void releaseHost(void *p);
  // Copies host memory from allocateHost into the backend's memory on
  // `queue` (its copy queue), after the work submitted there before.
  virtual void copyToDeviceOn(Queue &queue, void *dst, const void *src, size_t bytes);

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

  // Records the work `submit` launches on `origin`, one of this backend's
  // queues, and on the queues it joins through device events, as a run to
  // replay; fails for a backend that cannot (host backends).
  virtual Expected<std::unique_ptr<CapturedRun>> capture(Queue &origin,
                                                         const std::function<Error()> &submit);
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
