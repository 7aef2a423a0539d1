// The optimizer family of the cuda backend: the updates of each optimizer, written in place on
// the device, and the per-step coefficients of the fused forms (fused_update itself is a
// generated kernel, RegionOps.cpp). Each takes f32 and f64 parameters, with a learning rate of
// either type; NAdam keeps its step's scalars in a few bytes of workspace.
#include "backends/cuda/CudaOps.h"

namespace dtnn::cuda {

void addOptimizerOps(std::vector<CudaOp> &ops) {
  std::vector<ir::DType> floats = {ir::DType::F32, ir::DType::F64};
  for (const char *name : {"sgd_update", "adam_update", "adamw_update", "rmsprop_update",
                           "sgd_coefficients", "adam_coefficients", "adamw_coefficients"})
    ops.push_back({.op = name, .dtypes = floats});
  // The gradient's and the momentum's step factors and 1 - beta2^t, computed once per step by
  // one thread, as three scalars of the parameter's type.
  ops.push_back({.op = "nadam_update",
                 .dtypes = floats,
                 .workspace = [](const ir::Op &, const std::vector<ir::TensorType> &,
                                 const std::vector<ir::TensorType> &) {
                   return uint64_t(3 * sizeof(double));
                 }});
}

} // namespace dtnn::cuda
