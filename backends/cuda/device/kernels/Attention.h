// scaled_dot_product_attention's own kernel beside cuBLAS's products and
// the Softmax family's row softmax: the additive mask and the causal mask
// applied to the scaled scores of a run of batch matrices, as
// backends/reference/Attention.cpp applies them to each score (the mask
// added, then -inf above the diagonal). Instantiated for float and double.
#pragma once

#include <cstdint>
#include <cuda_runtime.h>

namespace dtnn::cuda {

// The most batch dimensions of q whose mask offsets the kernel computes.
constexpr int kMaxAttentionBatchDims = 8;

// Where the mask element of score (b, i, j) lies: batch matrix b as a mixed-radix number over
// q's batch dimensions `sizes` (the last varying fastest), each digit moving the offset by the
// mask's `strides` entry (0 where the mask broadcasts along it), plus i * row + j * col.
struct AttentionMask {
  int dims = 0;
  int64_t sizes[kMaxAttentionBatchDims] = {};
  int64_t strides[kMaxAttentionBatchDims] = {};
  int64_t row = 0, col = 0;
};

// scores [count, l, s] of batch matrices first .. first + count - 1: score += its mask element
// (where `mask` is not null), then score = -inf where `causal` and j > i.
template <typename T>
cudaError_t launchAttentionMask(T *scores, const T *mask, const AttentionMask &m, int64_t first,
                                int64_t count, int64_t l, int64_t s, bool causal, cudaStream_t stream);

} // namespace dtnn::cuda
