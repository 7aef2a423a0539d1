// The pooling family of the cuda backend (ir/ops/Pool.cpp): maxpool, avgpool,
// global_avgpool and their backward ops, in f32 and f64, by the module's own
// kernels (backends/cuda/device/Pool.cpp) at every attribute the ops take.
// cuDNN's pooling would not cover them: its descriptors cannot express
// asymmetric padding nor ceil mode's last window, and its maxpool gradient
// does not promise the reference's choice among equal maxima (the first in
// the window) nor a NaN's.
#include "backends/cuda/CudaOps.h"

namespace dtnn::cuda {

void addPoolOps(std::vector<CudaOp> &ops) {
  std::vector<ir::DType> floats = {ir::DType::F32, ir::DType::F64};
  for (const char *name : {"maxpool", "maxpool_backward", "avgpool", "avgpool_backward", "global_avgpool",
                           "global_avgpool_backward"})
    ops.push_back({.op = name, .dtypes = floats});
}

} // namespace dtnn::cuda
