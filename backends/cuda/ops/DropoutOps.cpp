// The Dropout family of the cuda backend (ir/ops/Dropout.cpp, ir/ops/Norm.cpp):
// dropout_train and drop_path_train with the reference's masks bit for bit,
// and the inference forms dropout and drop_path (the identity), in f32 and
// f64, by the module's own kernels (backends/cuda/device/Dropout.cpp). Each
// element is read before its results are written, by the same thread, so a
// result may take x's storage. The training forms take x with a sample
// dimension (their draws are counted from the rank's first sample).
#include "backends/cuda/CudaOps.h"

namespace dtnn::cuda {

namespace {

bool claimsSamples(const ir::Op &, const std::vector<ir::TensorType> &in) {
  return !in.empty() && in[0].rank() >= 1;
}

} // namespace

void addDropoutOps(std::vector<CudaOp> &ops) {
  std::vector<ir::DType> floats = {ir::DType::F32, ir::DType::F64};
  for (const char *name : {"dropout_train", "drop_path_train"})
    ops.push_back({.op = name, .dtypes = floats, .claims = claimsSamples, .reuse = true});
  for (const char *name : {"dropout", "drop_path"})
    ops.push_back({.op = name, .dtypes = floats, .reuse = true});
}

} // namespace dtnn::cuda
