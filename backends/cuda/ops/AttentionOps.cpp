// The attention family of the cuda backend (ir/ops/Attention.cpp):
// scaled_dot_product_attention and its backward op, with the additive mask,
// is_causal and scale, in f32 and f64, as cuBLAS products around a row
// softmax (backends/cuda/device/Attention.cpp), a run of batch matrices at
// a time. The workspace is cuBLAS's block, then the scores of a run (the
// probabilities, and for the backward op their gradient too): as many
// matrices as fit in 64 MiB, at least one. cuBLAS takes int sizes, and
// one matrix's scores may take at most 1 GiB; other attention, and empty
// attention, stays on the reference backend.
#include "backends/cuda/CudaOps.h"
#include "ir/ops/AttentionShape.h"

#include <algorithm>
#include <climits>
#include <cstdint>

namespace dtnn::cuda {

namespace {

// cuBLAS's block of workspace: 32 MiB, and 256 bytes to align it (kCublasBlockBytes in
// device/Blas.h).
constexpr uint64_t kCublasBlock = (uint64_t(32) << 20) + 256;
// The scores a run of batch matrices may take, and the most one matrix may take.
constexpr uint64_t kRunScores = uint64_t(64) << 20;
constexpr uint64_t kMatrixScores = uint64_t(1) << 30;
// The most batch dimensions of a masked q (kMaxAttentionBatchDims in
// device/kernels/Attention.h).
constexpr size_t kMaxMaskedBatchDims = 8;

// Where q, k, v and the mask begin among each op's operands.
size_t firstOf(const ir::Op &op) { return op.name() == "scaled_dot_product_attention_backward" ? 1 : 0; }

// The scores bytes of one batch matrix: the probabilities, and for the backward op their
// gradient.
uint64_t matrixScores(const ir::Op &op, const ir::AttentionShape &g, ir::DType t) {
  return uint64_t(firstOf(op) ? 2 : 1) * uint64_t(g.l) * uint64_t(g.s) * ir::dtypeSize(t);
}

std::vector<ir::TensorType> qkvmOf(const ir::Op &op, const std::vector<ir::TensorType> &in) {
  return {in.begin() + std::ptrdiff_t(firstOf(op)), in.end()};
}

bool claimsAttention(const ir::Op &op, const std::vector<ir::TensorType> &in) {
  std::vector<ir::TensorType> qkvm = qkvmOf(op, in);
  if (qkvm.size() < 3) return false;
  for (const ir::TensorType &t : qkvm)
    if (!t.isStatic()) return false;
  if (qkvm.size() > 3 && qkvm[0].rank() - 2 > kMaxMaskedBatchDims) return false;
  ir::AttentionShape g(qkvm, op.attrs());
  for (int64_t d : {g.l, g.s, g.e, g.ev})
    if (d <= 0 || d > INT_MAX) return false;
  return g.batch > 0 && matrixScores(op, g, qkvm[0].dtype) <= kMatrixScores;
}

uint64_t attentionWorkspace(const ir::Op &op, const std::vector<ir::TensorType> &in,
                            const std::vector<ir::TensorType> &) {
  std::vector<ir::TensorType> qkvm = qkvmOf(op, in);
  ir::AttentionShape g(qkvm, op.attrs());
  uint64_t perMatrix = matrixScores(op, g, qkvm[0].dtype);
  uint64_t run = std::clamp<uint64_t>(kRunScores / perMatrix, 1, uint64_t(g.batch));
  return kCublasBlock + run * perMatrix;
}

} // namespace

void addAttentionOps(std::vector<CudaOp> &ops) {
  std::vector<ir::DType> floats = {ir::DType::F32, ir::DType::F64};
  for (const char *name : {"scaled_dot_product_attention", "scaled_dot_product_attention_backward"})
    ops.push_back({.op = name, .dtypes = floats, .claims = claimsAttention, .workspace = attentionWorkspace});
}

} // namespace dtnn::cuda
