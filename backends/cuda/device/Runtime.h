// The device module's entry points behind its DeviceApi (Api.cpp).
#pragma once

#include "backends/cuda/DeviceApi.h"

namespace dtnn::cuda {

Expected<DeviceInfo> startDevice(const DeviceSettings &s);
void *allocateDevice(size_t bytes);
void releaseDevice(void *p);
void *allocatePinned(size_t bytes);
void releasePinned(void *p);
Error copySync(void *dst, const void *src, size_t bytes);
uint64_t peakDeviceBytes();
Expected<std::unique_ptr<StepGraph>> captureStep(runtime::Queue &origin,
                                                 const std::function<Error()> &submit);
// Compiles a region's source for `arch` with NVRTC (Region.cpp); the cubin's size.
Expected<size_t> compileRegionSource(const RegionCode &code, const std::string &arch);

} // namespace dtnn::cuda
