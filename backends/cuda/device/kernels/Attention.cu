// Attention's masks (see Attention.h): a grid-stride loop over the scores,
// one element a thread.
#include "backends/cuda/device/kernels/Attention.h"
#include "backends/cuda/device/kernels/Common.cuh"

#include <algorithm>

namespace dtnn::cuda {

namespace {


// The offset of batch matrix b's mask.
__device__ inline int64_t maskOffset(const AttentionMask &m, int64_t b) {
  int64_t offset = 0;
  for (int d = m.dims - 1; d >= 0; --d) {
    offset += (b % m.sizes[d]) * m.strides[d];
    b /= m.sizes[d];
  }
  return offset;
}

template <typename T>
__global__ void attentionMask(T *scores, const T *mask, AttentionMask m, int64_t first, int64_t count,
                              int64_t l, int64_t s, bool causal) {
  const int64_t matrix = l * s, total = count * matrix;
  for (int64_t x = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; x < total;
       x += int64_t(gridDim.x) * blockDim.x) {
    const int64_t b = first + x / matrix, rest = x % matrix, i = rest / s, j = rest % s;
    T v = scores[x];
    if (mask) v += mask[maskOffset(m, b) + i * m.row + j * m.col];
    if (causal && j > i) v = T(-INFINITY);
    scores[x] = v;
  }
}

} // namespace

template <typename T>
cudaError_t launchAttentionMask(T *scores, const T *mask, const AttentionMask &m, int64_t first,
                                int64_t count, int64_t l, int64_t s, bool causal, cudaStream_t stream) {
  const int64_t total = count * l * s;
  if (total == 0) return cudaSuccess;
  attentionMask<T><<<blocksFor(total), kThreads, 0, stream>>>(scores, mask, m, first, count, l, s, causal);
  return cudaGetLastError();
}

template cudaError_t launchAttentionMask<float>(float *, const float *, const AttentionMask &, int64_t,
                                                int64_t, int64_t, int64_t, bool, cudaStream_t);
template cudaError_t launchAttentionMask<double>(double *, const double *, const AttentionMask &, int64_t,
                                                 int64_t, int64_t, int64_t, bool, cudaStream_t);

} // namespace dtnn::cuda
