// The dense family of the cuda backend (ir/ops/Dense.cpp, ir/ops/Matmul.cpp):
// dense (any rank, with its bias and fused activation), its data and weight
// gradients and matmul (transposes, broadcasting batch dimensions) as cuBLAS
// products, and dense_backward_bias as a deterministic sum of rows of the
// module's own (backends/cuda/device/Blas.cpp), in f32 and f64. The
// products' workspace is cuBLAS's block (device/Blas.h); the bias
// gradient's holds the partial sums of its segments of rows. cuBLAS takes
// int sizes: larger products stay on the reference backend, as do empty
// ones.
#include "backends/cuda/CudaOps.h"
#include "ir/ops/FusedActivation.h"

#include <algorithm>
#include <climits>
#include <cstdint>

namespace dtnn::cuda {

namespace {

// cuBLAS's block of workspace: 32 MiB, and 256 bytes to align it (kCublasBlockBytes in
// device/Blas.h).
constexpr uint64_t kCublasBlock = (uint64_t(32) << 20) + 256;

uint64_t cublasBlock(const ir::Op &, const std::vector<ir::TensorType> &,
                     const std::vector<ir::TensorType> &) {
  return kCublasBlock;
}

// Whether every dimension of `t` is static, positive and at most INT_MAX, and so is its number
// of rows (its elements over its last dimension).
bool fitsInt(const ir::TensorType &t) {
  if (!t.isStatic() || t.rank() < 1) return false;
  int64_t rows = 1;
  for (size_t i = 0; i < t.rank(); ++i) {
    if (t.dims[i] <= 0 || t.dims[i] > INT_MAX) return false;
    if (i + 1 < t.rank()) rows *= t.dims[i];
    if (rows > INT_MAX) return false;
  }
  return true;
}

bool allFitInt(const std::vector<ir::TensorType> &in) { return std::all_of(in.begin(), in.end(), fitsInt); }

// dense with one of the fused activations the device kernel applies.
bool claimsDense(const ir::Op &op, const std::vector<ir::TensorType> &in) {
  std::string act = ir::fusedActivationOf(op);
  return (act.empty() || ir::isFusableActivation(act)) && allFitInt(in);
}

bool claimsSizes(const ir::Op &, const std::vector<ir::TensorType> &in) { return allFitInt(in); }

// matmul of matrices within cuBLAS's int sizes, at most INT_MAX of them.
bool claimsMatmul(const ir::Op &, const std::vector<ir::TensorType> &in) {
  if (in.size() != 2 || !allFitInt(in)) return false;
  const ir::TensorType &a = in[0], &b = in[1];
  int64_t count = 1;
  for (size_t d = 0; d + 2 < std::max(a.rank(), b.rank()); ++d) {
    // Batch dimension d of the result, counted from its end: the operands' broadcast.
    size_t back = d + 3;
    int64_t da = back <= a.rank() ? a.dims[a.rank() - back] : 1;
    int64_t db = back <= b.rank() ? b.dims[b.rank() - back] : 1;
    count *= std::max(da, db);
    if (count > INT_MAX) return false;
  }
  return true;
}

// The partial sums of dense_backward_bias dy [rows, m]: a segment of rows per 32 rows, enough
// segments for about 2^18 threads (a column each) and at most 256; none for one segment.
uint64_t biasGradWorkspace(const ir::Op &, const std::vector<ir::TensorType> &in,
                           const std::vector<ir::TensorType> &) {
  if (in.empty() || !fitsInt(in[0])) return 0;
  int64_t m = in[0].dims.back(), rows = *in[0].numElements() / m;
  int64_t segments =
      std::max<int64_t>(1, std::min({rows / 32, ((int64_t(1) << 18) + m - 1) / m, int64_t(256)}));
  return segments > 1 ? uint64_t(segments * m) * ir::dtypeSize(in[0].dtype) : 0;
}

} // namespace

void addBlasOps(std::vector<CudaOp> &ops) {
  std::vector<ir::DType> floats = {ir::DType::F32, ir::DType::F64};
  ops.push_back({.op = "dense", .dtypes = floats, .claims = claimsDense, .workspace = cublasBlock});
  for (const char *name : {"dense_backward_data", "dense_backward_weights"})
    ops.push_back({.op = name, .dtypes = floats, .claims = claimsSizes, .workspace = cublasBlock});
  ops.push_back(
      {.op = "dense_backward_bias", .dtypes = floats, .claims = claimsSizes, .workspace = biasGradWorkspace});
  ops.push_back({.op = "matmul", .dtypes = floats, .claims = claimsMatmul, .workspace = cublasBlock});
}

} // namespace dtnn::cuda
