// The Softmax family of the cuda backend (ir/ops/Activation.cpp): softmax,
// log_softmax and their backward ops along any axis, in f32 and f64, by the
// module's own kernels (backends/cuda/device/Softmax.cpp), which cuDNN's
// softmax (the channel axis only) would not cover. Each element is read
// and written by one thread, reads first, so a result may take an operand's
// storage.
#include "backends/cuda/CudaOps.h"

namespace dtnn::cuda {

void addSoftmaxOps(std::vector<CudaOp> &ops) {
  std::vector<ir::DType> floats = {ir::DType::F32, ir::DType::F64};
  for (const char *name : {"softmax", "log_softmax", "softmax_backward", "log_softmax_backward"})
    ops.push_back({.op = name, .dtypes = floats, .reuse = true});
}

} // namespace dtnn::cuda
