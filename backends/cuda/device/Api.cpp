// The device module's one exported symbol: its DeviceApi.
#include "backends/cuda/device/Device.h"
#include "backends/cuda/device/Runtime.h"
#include "backends/cuda/device/StreamQueue.h"

#include <mutex>

namespace dtnn::cuda {

namespace {

std::mutex statMu;
std::map<std::string, int64_t> stats;

std::unique_ptr<runtime::Queue> makeQueue(const std::string &name, int priority) {
  return std::make_unique<StreamQueue>(name, priority);
}

Expected<std::unique_ptr<DeviceKernel>> makeKernel(const DeviceKernelSpec &spec) {
  registerDeviceKernels();
  const DeviceKernelMaker *make = DeviceRegistry::get().find(spec.kind);
  if (!make) return Error::make("the cuda device module has no kernel for '" + spec.kind + "'");
  return (*make)(spec);
}

std::vector<std::string> kinds() {
  registerDeviceKernels();
  return DeviceRegistry::get().kinds();
}

std::string summary() {
  std::lock_guard<std::mutex> lock(statMu);
  auto get = [](const char *n) { return stats.count(n) ? stats.at(n) : 0; };
  return std::to_string(get("compiled")) + " generated kernels compiled and " +
         std::to_string(get("loaded")) + " loaded from the cache, " +
         std::to_string(get("measured")) + " convolution algorithm searches";
}

const DeviceApi api{DeviceApi::kVersion, startDevice, allocateDevice, releaseDevice,
                    allocatePinned, releasePinned, copySync, makeQueue, makeKernel, kinds,
                    captureStep, compileRegionSource, summary, peakDeviceBytes,
                    timeNcclAllreduces};

} // namespace

void countStat(const std::string &name, int64_t add) {
  std::lock_guard<std::mutex> lock(statMu);
  stats[name] += add;
}

int64_t statOf(const std::string &name) {
  std::lock_guard<std::mutex> lock(statMu);
  return stats.count(name) ? stats.at(name) : 0;
}

} // namespace dtnn::cuda

extern "C" __attribute__((visibility("default"))) const dtnn::cuda::DeviceApi *dtnn_cuda_device_api() {
  return &dtnn::cuda::api;
}
