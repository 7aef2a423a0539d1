// The Encoding family of the cuda device module's kernels (placeholder until its kernels land).
#include "backends/cuda/device/Device.h"

namespace dtnn::cuda {

void registerEncodingKernels(DeviceRegistry &) {}

} // namespace dtnn::cuda
