// The dense family's own kernels (see Blas.h): a grid-stride loop over the
// result for the epilogue, the activations written as backends/reference/
// FusedActivation.h writes them, and a thread per column (neighbouring
// threads reading neighbouring elements of a row) for the sums of rows.
#include "backends/cuda/device/kernels/Blas.h"
#include "backends/cuda/device/kernels/Common.cuh"

#include <algorithm>

namespace dtnn::cuda {

namespace {

constexpr int64_t kMaxSegments = 65535; // gridDim.y

__device__ inline float expOf(float v) { return expf(v); }
__device__ inline double expOf(double v) { return exp(v); }
__device__ inline float tanhOf(float v) { return tanhf(v); }
__device__ inline double tanhOf(double v) { return tanh(v); }

// The reference's activations: relu passes only v > 0 (NaN gives 0), relu6 is
// min(max(v, 0), 6) with std::max's and std::min's comparisons (NaN stays NaN).
template <DenseAct A, typename T> __device__ __forceinline__ T activate(T v) {
  if constexpr (A == DenseAct::Relu) {
    return v > T(0) ? v : T(0);
  } else if constexpr (A == DenseAct::Relu6) {
    T m = v < T(0) ? T(0) : v;
    return T(6) < m ? T(6) : m;
  } else if constexpr (A == DenseAct::Sigmoid) {
    return T(1) / (T(1) + expOf(-v));
  } else if constexpr (A == DenseAct::Tanh) {
    return tanhOf(v);
  } else {
    return v;
  }
}

template <DenseAct A, typename T>
__global__ void denseEpilogue(T *y, const T *bias, int64_t total, int64_t m) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    T v = y[i];
    if (bias) v += bias[i % m];
    y[i] = activate<A>(v);
  }
}

template <DenseAct A, typename T>
cudaError_t epilogueAs(T *y, const T *bias, int64_t total, int64_t m, cudaStream_t stream) {
  denseEpilogue<A, T><<<blocksFor(total), kThreads, 0, stream>>>(y, bias, total, m);
  return cudaGetLastError();
}

// Row s of out [segments, m] = the sum of rows s * per .. (s + 1) * per - 1 of dy [rows, m],
// in row order; segment s is blockIdx.y.
template <typename T> __global__ void segmentSums(const T *dy, T *out, int64_t rows, int64_t m, int64_t per) {
  int64_t j = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= m) return;
  const int64_t begin = int64_t(blockIdx.y) * per, end = begin + per < rows ? begin + per : rows;
  T acc = T(0);
  for (int64_t r = begin; r < end; ++r) acc += dy[r * m + j];
  out[int64_t(blockIdx.y) * m + j] = acc;
}

} // namespace

template <typename T>
cudaError_t launchDenseEpilogue(T *y, const T *bias, int64_t total, int64_t m, DenseAct act,
                                cudaStream_t stream) {
  if (total == 0) return cudaSuccess;
  switch (act) {
  case DenseAct::None: return epilogueAs<DenseAct::None>(y, bias, total, m, stream);
  case DenseAct::Relu: return epilogueAs<DenseAct::Relu>(y, bias, total, m, stream);
  case DenseAct::Relu6: return epilogueAs<DenseAct::Relu6>(y, bias, total, m, stream);
  case DenseAct::Sigmoid: return epilogueAs<DenseAct::Sigmoid>(y, bias, total, m, stream);
  case DenseAct::Tanh: return epilogueAs<DenseAct::Tanh>(y, bias, total, m, stream);
  }
  return cudaErrorInvalidValue;
}

template <typename T>
cudaError_t launchColumnSums(const T *dy, T *db, T *partial, int64_t rows, int64_t m, int64_t segments,
                             cudaStream_t stream) {
  if (rows <= 0 || m <= 0) return cudaErrorInvalidValue;
  segments = std::max<int64_t>(1, std::min({segments, rows, kMaxSegments}));
  const int64_t per = (rows + segments - 1) / segments;
  segments = (rows + per - 1) / per;
  const unsigned columnBlocks = unsigned((m + kThreads - 1) / kThreads);
  if (segments == 1) {
    segmentSums<T><<<dim3(columnBlocks, 1), kThreads, 0, stream>>>(dy, db, rows, m, rows);
    return cudaGetLastError();
  }
  segmentSums<T><<<dim3(columnBlocks, unsigned(segments)), kThreads, 0, stream>>>(dy, partial, rows, m, per);
  if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  // The partial rows, summed in segment order: the same kernel over them, one segment.
  segmentSums<T><<<dim3(columnBlocks, 1), kThreads, 0, stream>>>(partial, db, segments, m, segments);
  return cudaGetLastError();
}

template cudaError_t launchDenseEpilogue<float>(float *, const float *, int64_t, int64_t, DenseAct,
                                                cudaStream_t);
template cudaError_t launchDenseEpilogue<double>(double *, const double *, int64_t, int64_t, DenseAct,
                                                 cudaStream_t);
template cudaError_t launchColumnSums<float>(const float *, float *, float *, int64_t, int64_t, int64_t,
                                             cudaStream_t);
template cudaError_t launchColumnSums<double>(const double *, double *, double *, int64_t, int64_t, int64_t,
                                              cudaStream_t);

} // namespace dtnn::cuda
