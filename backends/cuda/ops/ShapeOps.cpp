// The Shape family of the cuda backend (ir/ops/Shape.cpp), at every element
// type: its kernels move bytes (backends/cuda/device/Shape.cpp). flatten,
// reshape and reshape_like may give their result the operand's storage
// (then they do nothing); concat, slice, slice_backward and transpose move
// elements to other offsets, so they never run in place.
#include "backends/cuda/CudaOps.h"

namespace dtnn::cuda {

namespace {

// The most dimensions the device's transpose takes (kMaxTransposeRank of
// backends/cuda/device/kernels/Shape.h).
constexpr size_t kMaxTransposeRank = 16;

bool claimsTranspose(const ir::Op &, const std::vector<ir::TensorType> &in) {
  return !in.empty() && in[0].rank() <= kMaxTransposeRank;
}

} // namespace

void addShapeOps(std::vector<CudaOp> &ops) {
  // Element i of the result is element i of the operand: the same storage serves both.
  for (const char *name : {"flatten", "reshape", "reshape_like"})
    ops.push_back({.op = name, .dtypes = allDTypes(), .reuse = true});
  for (const char *name : {"concat", "slice", "slice_backward"})
    ops.push_back({.op = name, .dtypes = allDTypes()});
  ops.push_back({.op = "transpose", .dtypes = allDTypes(), .claims = claimsTranspose});
}

} // namespace dtnn::cuda
