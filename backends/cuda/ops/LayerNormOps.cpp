// The LayerNorm family of the cuda backend (ir/ops/LayerNorm.cpp): layernorm
// and layernorm_backward over any trailing axes, with or without gamma and
// beta, in f32 and f64, by the module's own kernels (backends/cuda/device/
// LayerNorm.cpp). Each element of layernorm is read and written by one
// thread, reads first, so its result may take x's storage. Both take x of
// static, positive dimensions. With gamma, the backward's workspace holds
// each row's mean and invstd, then the partial sums of dgamma and dbeta per
// segment of rows.
#include "backends/cuda/CudaOps.h"

#include <algorithm>

namespace dtnn::cuda {

namespace {

// x [rows, width], width the product of its last `axes` dimensions.
struct Rows {
  int64_t rows = 1, width = 1;
};

Rows rowsOf(const ir::Op &op, const ir::TensorType &x) {
  Rows r;
  size_t axes = size_t(op.attrs().getInt("axes"));
  for (size_t d = 0; d < x.rank(); ++d) (d + axes < x.rank() ? r.rows : r.width) *= x.dims[d];
  return r;
}

// x (operand `at`) of static, positive dimensions.
template <size_t at> bool claimsSized(const ir::Op &, const std::vector<ir::TensorType> &in) {
  if (in.size() <= at || !in[at].isStatic()) return false;
  return std::all_of(in[at].dims.begin(), in[at].dims.end(), [](int64_t d) { return d > 0; });
}

// With gamma, layernorm_backward (dy, x [rows, width]) needs two doubles a row for the
// statistics and two per segment and column for the partial sums: a segment per 32 rows,
// enough segments for about 2^18 threads (a column each), at most 256. device/LayerNorm.cpp
// reads the number of segments back from the size.
uint64_t backwardWorkspace(const ir::Op &op, const std::vector<ir::TensorType> &in,
                           const std::vector<ir::TensorType> &) {
  if (in.size() != 3) return 0;
  Rows r = rowsOf(op, in[1]);
  int64_t segments = std::max<int64_t>(
      1, std::min({r.rows / 32, ((int64_t(1) << 18) + r.width - 1) / r.width, int64_t(256)}));
  return uint64_t(2 * r.rows + 2 * segments * r.width) * sizeof(double);
}

} // namespace

void addLayerNormOps(std::vector<CudaOp> &ops) {
  std::vector<ir::DType> floats = {ir::DType::F32, ir::DType::F64};
  ops.push_back({.op = "layernorm", .dtypes = floats, .claims = claimsSized<0>, .reuse = true});
  ops.push_back({.op = "layernorm_backward",
                 .dtypes = floats,
                 .claims = claimsSized<1>,
                 .workspace = backwardWorkspace});
}

} // namespace dtnn::cuda
