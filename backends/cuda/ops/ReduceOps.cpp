// The Reduce family of the cuda backend (backends/cuda/device/Reduce.cpp):
// reduce_sum, reduce_max and reduce_max_backward in f32 and f64, each
// output's elements combined in segments whose partial results take
// workspace (device/kernels/ReduceSplit.h); and the helpers of the gradient
// rules, broadcast_like and fill at every element type, count_like at the
// floating-point ones. Each takes static dimensions only; a reduction or
// broadcast of more dimensions than its kernel's arrays hold stays on the
// reference backend. None runs in place: a reduction's result is smaller
// than its operand, and a broadcast's larger.
#include "backends/cuda/CudaOps.h"
#include "backends/cuda/device/kernels/ReduceSplit.h"

namespace dtnn::cuda {

namespace {

// The most dimensions broadcast_like takes (kMaxBroadcastDims of device/kernels/Reduce.h).
constexpr size_t kMaxBroadcastDims = 16;

bool staticDims(const ir::TensorType &t) {
  for (int64_t d : t.dims)
    if (d < 0) return false;
  return true;
}

// The types of x and of its reduction y of a reduction op at operand types `in` (the op's own
// result type may still have a batch dimension): x with its axes of size 1, or for
// reduce_max_backward (operand 1, operand 0).
std::pair<ir::TensorType, ir::TensorType> reducedPair(const ir::Op &op,
                                                      const std::vector<ir::TensorType> &in) {
  if (op.name() == "reduce_max_backward") return {in[1], in[0]};
  ir::TensorType y = in[0];
  for (int64_t a : op.attrs().getInts("axes")) y.dims[size_t(a)] = 1;
  return {in[0], y};
}

bool claimsReduce(const ir::Op &op, const std::vector<ir::TensorType> &in) {
  auto [x, y] = reducedPair(op, in);
  if (!staticDims(x) || !staticDims(y)) return false;
  bool fits = false;
  reduceGeom(x.dims, y.dims, &fits);
  return fits;
}

// The partial results of a reduction with more than one segment per output; reduce_max_backward
// always counts its ties there.
uint64_t reduceWorkspace(const ir::Op &op, const std::vector<ir::TensorType> &in,
                         const std::vector<ir::TensorType> &) {
  auto [x, y] = reducedPair(op, in);
  bool fits = false;
  ReduceGeom g = reduceGeom(x.dims, y.dims, &fits);
  if (!fits) return 0;
  return g.segments > 1 || op.name() == "reduce_max_backward" ? g.partialBytes() : 0;
}

// broadcast_like's result has like's type (operand 1).
bool claimsBroadcast(const ir::Op &, const std::vector<ir::TensorType> &in) {
  return staticDims(in[0]) && staticDims(in[1]) && in[1].rank() <= kMaxBroadcastDims;
}

// fill's result has like's type (operand 0).
bool claimsFill(const ir::Op &, const std::vector<ir::TensorType> &in) { return staticDims(in[0]); }

// count_like's result has like's type (operand 1), which must be floating point; x only counts.
bool claimsCountLike(const ir::Op &, const std::vector<ir::TensorType> &in) {
  ir::DType t = in[1].dtype;
  return (t == ir::DType::F32 || t == ir::DType::F64) && staticDims(in[0]) && staticDims(in[1]);
}

} // namespace

void addReduceOps(std::vector<CudaOp> &ops) {
  std::vector<ir::DType> floats = {ir::DType::F32, ir::DType::F64};
  for (const char *name : {"reduce_sum", "reduce_max", "reduce_max_backward"})
    ops.push_back({.op = name, .dtypes = floats, .claims = claimsReduce, .workspace = reduceWorkspace});
  ops.push_back({.op = "broadcast_like", .dtypes = allDTypes(), .claims = claimsBroadcast});
  ops.push_back({.op = "fill", .dtypes = allDTypes(), .claims = claimsFill});
  // Keyed by x's element type (operand 0), which may be any.
  ops.push_back({.op = "count_like", .dtypes = allDTypes(), .claims = claimsCountLike});
}

} // namespace dtnn::cuda
