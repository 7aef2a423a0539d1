// The Encoding family of the cuda backend (ir/ops/Encoding.cpp): one_hot,
// normalize, embedding and embedding_backward, by the module's own kernels
// (backends/cuda/device/Encoding.cpp), in f32 and f64. The registry keys an
// op by its operand 0: the i32 labels and indices of one_hot and embedding,
// the u8 images of normalize, dy of embedding_backward. embedding_backward
// sums the rows of repeated indices in token order without atomics.
// normalize takes one mean and std, or one per channel for at most
// kNormalizeChannels (device/kernels/Encoding.h) channels.
#include "backends/cuda/CudaOps.h"

namespace dtnn::cuda {

namespace {

// The most channels' statistics the device's normalize takes (kNormalizeChannels).
constexpr size_t kNormalizeChannels = 16;

bool claimsNormalize(const ir::Op &op, const std::vector<ir::TensorType> &) {
  return op.attrs().getFloats("mean").size() <= kNormalizeChannels;
}

// The table (operand 1) of embedding is f32 or f64.
bool claimsEmbedding(const ir::Op &, const std::vector<ir::TensorType> &in) {
  return in.size() == 2 && (in[1].dtype == ir::DType::F32 || in[1].dtype == ir::DType::F64);
}

} // namespace

void addEncodingOps(std::vector<CudaOp> &ops) {
  std::vector<ir::DType> floats = {ir::DType::F32, ir::DType::F64};
  ops.push_back({.op = "one_hot", .dtypes = {ir::DType::I32}});
  ops.push_back({.op = "normalize", .dtypes = {ir::DType::U8}, .claims = claimsNormalize});
  ops.push_back({.op = "embedding", .dtypes = {ir::DType::I32}, .claims = claimsEmbedding});
  ops.push_back({.op = "embedding_backward", .dtypes = floats});
}

} // namespace dtnn::cuda
