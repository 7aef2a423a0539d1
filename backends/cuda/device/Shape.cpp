// The Shape family of the cuda device module's kernels (placeholder until its kernels land).
#include "backends/cuda/device/Device.h"

namespace dtnn::cuda {

void registerShapeKernels(DeviceRegistry &) {}

} // namespace dtnn::cuda
