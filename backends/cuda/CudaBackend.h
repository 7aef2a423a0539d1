// The cuda backend: values in device memory, kernels that the device module
// (backends/cuda/DeviceApi.h) makes from the plan's steps, streams as
// queues, copies between host and device memory on the copy stream. Plans
// for it are made without a device; a run starts the device first
// (Backend::start), which loads the module.
#pragma once

#include "backends/cuda/DeviceApi.h"
#include "runtime/Backend.h"
#include "runtime/plan/Plan.h"

#include <memory>
#include <mutex>

namespace dtnn::cuda {

class CudaBackend final : public runtime::Backend {
public:
  explicit CudaBackend(const runtime::BackendOptions &o);
  ~CudaBackend() override;

  std::string_view name() const override;
  std::string summary() const override;
  runtime::MemorySpace memorySpace() const override { return runtime::MemorySpace::Device; }
  Expected<std::vector<std::pair<double, double>>>
  timeAllreduces(runtime::Communicator &comm, double maxBytes, int repeats) override;
  Error start() override;

  void *allocate(size_t bytes) override;
  void release(void *p) override;
  uint64_t memoryBytes() const override { return info_.memoryBytes; }
  void copyToDevice(void *dst, const void *src, size_t bytes) override;
  void copyToHost(void *dst, const void *src, size_t bytes) override;
  void *allocateHost(size_t bytes) override;
  void releaseHost(void *p) override;
  void copyToDeviceOn(runtime::Queue &queue, void *dst, const void *src, size_t bytes) override;

  runtime::Queue &computeQueue() override;
  runtime::Queue &copyQueue() override;
  Expected<std::unique_ptr<runtime::Kernel>> makeConversion(const runtime::BufferDesc &from,
                                                            const runtime::BufferDesc &to) override;
  Error synchronize() override;
  Expected<std::unique_ptr<runtime::CapturedRun>> capture(runtime::Queue &origin,
                                                          const std::function<Error()> &submit) override;

  // The module, once start() succeeded; null for a backend that only plans.
  const DeviceApi *api() const { return api_; }
  const DeviceInfo &info() const { return info_; }
  const DeviceSettings &deviceSettings() const { return settings_; }

private:
  void fail(Error e);
  DeviceSettings settings_;
  std::string collectives_ = "nccl"; // BackendOptions::collectives
  int ranksOnNode_ = 1;
  const DeviceApi *api_ = nullptr;
  DeviceInfo info_;
  std::unique_ptr<runtime::Queue> compute_, copy_;
  // Queues of a backend that only plans: no kernel ever runs on them.
  std::unique_ptr<runtime::Queue> idle_;
  // The first failure of a copy that returns nothing, reported by synchronize().
  std::mutex failureMu_;
  Error failure_;
};

// The folder generated kernels are kept in: `requested` + "/cuda" when a kernel cache is given
// (`--jit-cache`; "off": none), else $DTNN_CUDA_CACHE, else $XDG_CACHE_HOME/dtnn/cuda, else
// $HOME/.cache/dtnn/cuda.
std::string cudaCacheDir(const std::string &requested);

// Registers the cuda backend and its kernels (once; later calls do nothing).
Error registerCudaBackend();

// The CUDA source of the kernels `plan` generates for the cuda backend, each after a comment
// naming its step, its buffers and how it is launched (a source met before is named, not
// repeated): what `dtnnc compile --emit=cuda` prints.
Expected<std::string> generatedKernelsSource(const runtime::Plan &plan);

} // namespace dtnn::cuda
