// Loads the cuda backend's device module (libdtnn-cuda.so, beside libdtnn)
// the first time a run asks for a device.
#include "backends/cuda/DeviceApi.h"

#include <dlfcn.h>

#include <atomic>
#include <filesystem>
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
    Dl_info info;
    std::string path = kDeviceModule;
    if (dladdr(reinterpret_cast<void *>(&deviceApi), &info) && info.dli_fname)
      path = (std::filesystem::path(info.dli_fname).parent_path() / kDeviceModule).string();
    void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      const char *why = dlerror();
      failure = "cannot load the cuda backend's device module " + path + ": " +
                (why ? why : "unknown") +
                " (it needs the CUDA libraries cuDNN 9, cuBLAS 13 and NVRTC 13 on the library path)";
      return;
    }
    auto get = reinterpret_cast<const DeviceApi *(*)()>(dlsym(handle, kDeviceSymbol));
    const DeviceApi *found = get ? get() : nullptr;
    if (!found || found->version != DeviceApi::kVersion) {
      failure = path + " is not this libdtnn's cuda device module";
      return;
    }
    api = found;
    loaded = true;
  });
  if (!api) return Error::make(failure);
  return api;
}

} // namespace dtnn::cuda
