// The encodings (see Encoding.h). one_hot and normalize take a thread an
// element, embedding a block a token. embedding_backward gives each block a
// range of the table's rows, which its threads first zero (thread j its
// columns j, j + blockDim.x, ...) and then add to: each warp scans the
// indices 32 at a time, and for every index in the block's range, in token
// order, each thread adds that token's dy to its own columns of the row. An
// element of dw is so only ever touched by one thread, in token order, as
// the reference sums it.
#include "backends/cuda/device/kernels/Encoding.h"
#include "backends/cuda/device/kernels/Common.cuh"

#include <algorithm>
#include <limits>

namespace dtnn::cuda {

namespace {

// The most blocks embedding_backward splits the table's rows among.
constexpr int64_t kBackwardBlocks = 1024;

// Threads for rows of d elements: a warp's multiple covering d, at most kThreads.
int threadsFor(int64_t d) {
  return int(std::min<int64_t>(kThreads, (std::max<int64_t>(d, 1) + 31) / 32 * 32));
}

template <typename T> __global__ void oneHot(const int32_t *label, T *out, int64_t total, int64_t classes) {
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < total;
       e += int64_t(gridDim.x) * blockDim.x) {
    int64_t i = e / classes, c = e - i * classes;
    out[e] = label[i] == c ? T(1) : T(0);
  }
}

// The reference's (T(v) / T(255) - mean) / std, each operation rounded on its own.
__device__ inline float normalized(uint8_t v, float mean, float std) {
  return __fdiv_rn(__fsub_rn(__fdiv_rn(float(v), 255.0f), mean), std);
}
__device__ inline double normalized(uint8_t v, double mean, double std) {
  return __ddiv_rn(__dsub_rn(__ddiv_rn(double(v), 255.0), mean), std);
}

// Rows (planes) step over gridDim.y, each plane's elements over the blocks of gridDim.x.
template <typename T>
__global__ void normalizeImages(const uint8_t *x, T *y, int64_t rows, int64_t channels, int64_t plane,
                                NormalizeStats<T> stats) {
  for (int64_t row = blockIdx.y; row < rows; row += gridDim.y) {
    int c = stats.count > 1 ? int(row % channels) : 0;
    T mean = stats.mean[c], std = stats.std[c];
    const uint8_t *from = x + row * plane;
    T *to = y + row * plane;
    for (int64_t k = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; k < plane;
         k += int64_t(gridDim.x) * blockDim.x)
      to[k] = normalized(from[k], mean, std);
  }
}

template <typename T>
__global__ void embeddingRows(const int32_t *idx, const T *w, T *y, int64_t tokens, int64_t v, int64_t d) {
  for (int64_t t = blockIdx.x; t < tokens; t += gridDim.x) {
    int64_t r = idx[t];
    T *row = y + t * d;
    if (r < 0 || r >= v) {
      for (int64_t j = threadIdx.x; j < d; j += blockDim.x) row[j] = std::numeric_limits<T>::quiet_NaN();
    } else {
      const T *from = w + r * d;
      for (int64_t j = threadIdx.x; j < d; j += blockDim.x) row[j] = from[j];
    }
  }
}

// Block b owns the rows [b * per, (b + 1) * per) of dw.
template <typename T>
__global__ void embeddingBackwardRows(const T *__restrict__ dy, const int32_t *__restrict__ idx,
                                      T *__restrict__ dw, int64_t tokens, int64_t v, int64_t d, int64_t pad,
                                      int64_t per) {
  const int64_t lo = blockIdx.x * per, hi = std::min(v, lo + per);
  for (int64_t r = lo; r < hi; ++r)
    for (int64_t j = threadIdx.x; j < d; j += blockDim.x) dw[r * d + j] = T(0);
  const int lane = threadIdx.x & 31;
  for (int64_t first = 0; first < tokens; first += 32) {
    int64_t t = first + lane;
    int64_t r = t < tokens ? idx[t] : -1;
    unsigned mine = __ballot_sync(0xffffffffu, r >= lo && r < hi && r != pad);
    while (mine) {
      int k = __ffs(mine) - 1;
      mine &= mine - 1;
      int64_t row = __shfl_sync(0xffffffffu, r, k);
      const T *g = dy + (first + k) * d;
      T *to = dw + row * d;
      for (int64_t j = threadIdx.x; j < d; j += blockDim.x) to[j] += g[j];
    }
  }
}

} // namespace

template <typename T>
cudaError_t launchOneHot(const int32_t *label, T *out, int64_t n, int64_t classes, cudaStream_t stream) {
  int64_t total = n * classes;
  if (total == 0) return cudaSuccess;
  oneHot<T><<<blocksFor(total, kThreads), kThreads, 0, stream>>>(label, out, total, classes);
  return cudaGetLastError();
}

template <typename T>
cudaError_t launchNormalize(const uint8_t *x, T *y, int64_t rows, int64_t channels, int64_t plane,
                            const NormalizeStats<T> &stats, cudaStream_t stream) {
  if (rows == 0 || plane == 0) return cudaSuccess;
  dim3 grid(blocksFor(plane, kThreads, 1024), blocksFor(rows, 1, 65535));
  normalizeImages<T><<<grid, kThreads, 0, stream>>>(x, y, rows, channels, plane, stats);
  return cudaGetLastError();
}

template <typename T>
cudaError_t launchEmbedding(const int32_t *idx, const T *w, T *y, int64_t tokens, int64_t v, int64_t d,
                            cudaStream_t stream) {
  if (tokens == 0 || d == 0) return cudaSuccess;
  embeddingRows<T>
      <<<blocksFor(tokens, 1, int64_t(1) << 16), threadsFor(d), 0, stream>>>(idx, w, y, tokens, v, d);
  return cudaGetLastError();
}

template <typename T>
cudaError_t launchEmbeddingBackward(const T *dy, const int32_t *idx, T *dw, int64_t tokens, int64_t v,
                                    int64_t d, int64_t pad, cudaStream_t stream) {
  if (v == 0 || d == 0) return cudaSuccess;
  int64_t per = (v + kBackwardBlocks - 1) / kBackwardBlocks;
  embeddingBackwardRows<T>
      <<<blocksFor(v, per, kBackwardBlocks), threadsFor(d), 0, stream>>>(dy, idx, dw, tokens, v, d, pad, per);
  return cudaGetLastError();
}

#define DTNN_ENCODING_KERNELS(T)                                                                             \
  template cudaError_t launchOneHot<T>(const int32_t *, T *, int64_t, int64_t, cudaStream_t);                \
  template cudaError_t launchNormalize<T>(const uint8_t *, T *, int64_t, int64_t, int64_t,                   \
                                          const NormalizeStats<T> &, cudaStream_t);                          \
  template cudaError_t launchEmbedding<T>(const int32_t *, const T *, T *, int64_t, int64_t, int64_t,        \
                                          cudaStream_t);                                                     \
  template cudaError_t launchEmbeddingBackward<T>(const T *, const int32_t *, T *, int64_t, int64_t,         \
                                                  int64_t, int64_t, cudaStream_t);
DTNN_ENCODING_KERNELS(float)
DTNN_ENCODING_KERNELS(double)
#undef DTNN_ENCODING_KERNELS

} // namespace dtnn::cuda
