// Copies between memory spaces (host buffers are pinned, so the copy runs
// on its stream while the host goes on), and conversions between the
// backend's layouts on the device.
#include "backends/cuda/device/Device.h"

namespace dtnn::cuda {

namespace {

class Copy final : public DeviceOp {
public:
  Error launch(const runtime::KernelArgs &a, const Launch &l) override {
    size_t bytes = runtime::byteSize(a.out[0].type);
    if (bytes == 0 || a.in[0].data == a.out[0].data) return Error::success();
    return check(cudaMemcpyAsync(a.out[0].data, a.in[0].data, bytes, cudaMemcpyDefault, l.stream),
                 "cudaMemcpyAsync");
  }
};

} // namespace

void registerCopyKernels(DeviceRegistry &r) {
  r.add("copy", [](const DeviceKernelSpec &) { return make<Copy>(); });
  r.add("convert", [](const DeviceKernelSpec &s) -> Expected<std::unique_ptr<DeviceKernel>> {
    return Error::make("the cuda backend has no conversion from " + s.in[0].str() + " to " + s.out[0].str());
  });
}

} // namespace dtnn::cuda
