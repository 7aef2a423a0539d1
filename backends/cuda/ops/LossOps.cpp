// The Loss family of the cuda backend (ir/ops/Loss.cpp): the classifier
// losses softmax_cross_entropy and nll_loss, the elementwise losses mse_loss
// and bce_loss, their backward ops, and accuracy (top-k), in f32 and f64 with
// i32 labels, by the module's own kernels (backends/cuda/device/Loss.cpp),
// which sum in double in a fixed order as the reference does. Their
// workspace: softmax_cross_entropy and accuracy keep a double per row, the
// classifiers' backward ops the count of their rows, the elementwise losses
// a double per segment of their sum (device/kernels/ReduceSplit.h). Each
// takes static dimensions only.
#include "backends/cuda/CudaOps.h"
#include "backends/cuda/device/kernels/ReduceSplit.h"

namespace dtnn::cuda {

namespace {

bool staticOperands(const ir::Op &, const std::vector<ir::TensorType> &in) {
  for (const ir::TensorType &t : in)
    for (int64_t d : t.dims)
      if (d < 0) return false;
  return true;
}

int64_t elements(const ir::TensorType &t) {
  int64_t n = 1;
  for (int64_t d : t.dims) n *= d;
  return n;
}

// A workspace of `bytes` whatever the types.
CudaOp withWorkspace(std::string name, uint64_t (*bytes)(const std::vector<ir::TensorType> &in)) {
  return {.op = std::move(name),
          .dtypes = {ir::DType::F32, ir::DType::F64},
          .claims = staticOperands,
          .workspace = [bytes](const ir::Op &, const std::vector<ir::TensorType> &in,
                               const std::vector<ir::TensorType> &) { return bytes(in); }};
}

uint64_t perRow(const std::vector<ir::TensorType> &in) { return uint64_t(in[0].dims[0]) * 8; }
uint64_t oneCount(const std::vector<ir::TensorType> &) { return 8; }
uint64_t perSegment(const std::vector<ir::TensorType> &in) {
  return uint64_t(elementSplit(elements(in[0])).segments) * 8;
}

} // namespace

void addLossOps(std::vector<CudaOp> &ops) {
  for (const char *name : {"softmax_cross_entropy", "accuracy"}) ops.push_back(withWorkspace(name, perRow));
  for (const char *name : {"softmax_cross_entropy_backward", "nll_loss_backward"})
    ops.push_back(withWorkspace(name, oneCount));
  for (const char *name : {"mse_loss", "bce_loss"}) ops.push_back(withWorkspace(name, perSegment));
  for (const char *name : {"nll_loss", "mse_loss_backward", "bce_loss_backward"})
    ops.push_back({.op = name, .dtypes = {ir::DType::F32, ir::DType::F64}, .claims = staticOperands});
}

} // namespace dtnn::cuda
