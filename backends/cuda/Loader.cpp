// Loads the cuda backend's device module (libdtnn-cuda.so, beside libdtnn)
// the first time a run asks for a device.
#include "backends/cuda/DeviceApi.h"
#include "ir/SiblingModule.h"

#include <atomic>
#include <mutex>

namespace dtnn::cuda {

namespace {
std::atomic<bool> loaded{false};
} // namespace

bool deviceModuleLoaded() { return loaded.load(); }

Expected<const DeviceApi *> deviceApi() {
  static std::once_flag once;
  static const DeviceApi *api = nullptr;
  static std::string failure;
  std::call_once(once, [] {
    Expected<const DeviceApi *> found = loadSiblingApi<DeviceApi>(
        kDeviceModule, kDeviceSymbol, "the cuda backend's device module",
        " (it needs the CUDA libraries cuDNN 9, cuBLAS 13 and NVRTC 13 on the library path)");
    if (!found) {
      failure = found.error().message();
      return;
    }
    api = *found;
    loaded = true;
  });
  if (!api) return Error::make(failure);
  return api;
}

} // namespace dtnn::cuda
