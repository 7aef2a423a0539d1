// softmax, log_softmax and their backward ops (see Softmax.h). A row is
// covered by a warp (its elements held in registers between the passes),
// by a block, or by one thread; each thread sums its own elements in order
// and the threads' partial results are combined by a butterfly within the
// warp (every lane ends with the same bits, as a + b == b + a) and, in a
// block, by adding the warps' results in warp order. The reference's
// roundings are kept where nvcc would contract a product into an addition.
#include "backends/cuda/device/kernels/Softmax.h"

#include <algorithm>

namespace dtnn::cuda {

namespace {

__device__ inline float expOf(float v) { return expf(v); }
__device__ inline double expOf(double v) { return exp(v); }
__device__ inline float logOf(float v) { return logf(v); }
__device__ inline double logOf(double v) { return log(v); }
__device__ inline float maxOf(float a, float b) { return fmaxf(a, b); }
__device__ inline double maxOf(double a, double b) { return fmax(a, b); }
// A product rounded on its own, never fused into a following addition.
__device__ inline float mulOf(float a, float b) { return __fmul_rn(a, b); }
__device__ inline double mulOf(double a, double b) { return __dmul_rn(a, b); }

template <typename T> __device__ inline T negInf() { return T(-INFINITY); }

// The offset of element 0 of row r, whose elements are s.inner apart.
__device__ inline int64_t rowBase(int64_t r, const SoftmaxShape &s) {
  int64_t o = r / s.inner;
  return o * s.n * s.inner + (r - o * s.inner);
}

template <bool Max, typename T> __device__ inline T combine(T a, T b) { return Max ? maxOf(a, b) : a + b; }

// The sum (or maximum) of v over the warp, the same in every lane.
template <bool Max, typename T> __device__ inline T warpReduce(T v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = combine<Max>(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// The sum (or maximum) of v over the block, the same in every thread: the warps' results added
// in warp order.
template <bool Max, typename T> __device__ inline T blockReduce(T v) {
  __shared__ T part[32];
  v = warpReduce<Max>(v);
  __syncthreads(); // every thread has read the previous reduction's results
  if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = v;
  __syncthreads();
  T r = part[0];
  for (unsigned w = 1; w < (blockDim.x >> 5); ++w) r = combine<Max>(r, part[w]);
  return r;
}

// A block per row: thread t holds elements t, t + blockDim.x, ...
struct BlockGroup {
  __device__ static int64_t firstRow() { return blockIdx.x; }
  __device__ static int64_t rowStep() { return gridDim.x; }
  __device__ static int64_t first() { return threadIdx.x; }
  __device__ static int64_t step() { return blockDim.x; }
  template <bool Max, typename T> __device__ static T reduce(T v) { return blockReduce<Max>(v); }
};

// A thread per row, walking down it in order, as the reference does.
struct ThreadGroup {
  __device__ static int64_t firstRow() { return int64_t(blockIdx.x) * blockDim.x + threadIdx.x; }
  __device__ static int64_t rowStep() { return int64_t(gridDim.x) * blockDim.x; }
  __device__ static int64_t first() { return 0; }
  __device__ static int64_t step() { return 1; }
  template <bool Max, typename T> __device__ static T reduce(T v) { return v; }
};

// softmax or log_softmax of the rows, a group of threads per row.
template <typename T, bool Log, typename G> __global__ void softmaxRows(const T *x, T *y, SoftmaxShape s) {
  const int64_t rows = s.outer * s.inner, n = s.n, inner = s.inner;
  for (int64_t r = G::firstRow(); r < rows; r += G::rowStep()) {
    const int64_t base = rowBase(r, s);
    T m = negInf<T>();
    for (int64_t k = G::first(); k < n; k += G::step()) m = maxOf(m, x[base + k * inner]);
    m = G::template reduce<true>(m);
    T sum = T(0);
    for (int64_t k = G::first(); k < n; k += G::step()) sum += expOf(x[base + k * inner] - m);
    sum = G::template reduce<false>(sum);
    if (Log) {
      T lse = m + logOf(sum);
      for (int64_t k = G::first(); k < n; k += G::step()) y[base + k * inner] = x[base + k * inner] - lse;
    } else {
      T inv = T(1) / sum;
      for (int64_t k = G::first(); k < n; k += G::step())
        y[base + k * inner] = mulOf(expOf(x[base + k * inner] - m), inv);
    }
  }
}

// softmax_backward or log_softmax_backward of the rows, a group of threads per row.
template <typename T, bool Log, typename G>
__global__ void softmaxBackwardRows(const T *dy, const T *y, T *dx, SoftmaxShape s) {
  const int64_t rows = s.outer * s.inner, n = s.n, inner = s.inner;
  for (int64_t r = G::firstRow(); r < rows; r += G::rowStep()) {
    const int64_t base = rowBase(r, s);
    T dot = T(0);
    for (int64_t k = G::first(); k < n; k += G::step()) {
      int64_t i = base + k * inner;
      dot += Log ? dy[i] : dy[i] * y[i];
    }
    dot = G::template reduce<false>(dot);
    for (int64_t k = G::first(); k < n; k += G::step()) {
      int64_t i = base + k * inner;
      dx[i] = Log ? dy[i] - mulOf(expOf(y[i]), dot) : mulOf(y[i], dy[i] - dot);
    }
  }
}

// softmax or log_softmax of rows of at most 32 * Per elements, a warp per row, lane l holding
// elements l, l + 32, ... in registers.
template <typename T, bool Log, int Per> __global__ void softmaxWarps(const T *x, T *y, SoftmaxShape s) {
  const int lane = threadIdx.x & 31;
  const int64_t rows = s.outer * s.inner, n = s.n, inner = s.inner;
  const int64_t step = int64_t(gridDim.x) * (blockDim.x >> 5);
  for (int64_t r = int64_t(blockIdx.x) * (blockDim.x >> 5) + (threadIdx.x >> 5); r < rows; r += step) {
    const int64_t base = rowBase(r, s);
    T v[Per];
    T m = negInf<T>();
#pragma unroll
    for (int i = 0; i < Per; ++i) {
      int64_t k = lane + 32 * i;
      v[i] = k < n ? x[base + k * inner] : negInf<T>();
      m = maxOf(m, v[i]);
    }
    m = warpReduce<true>(m);
    T sum = T(0);
#pragma unroll
    for (int i = 0; i < Per; ++i)
      if (lane + 32 * i < n) sum += expOf(v[i] - m);
    sum = warpReduce<false>(sum);
    T lse = m + logOf(sum), inv = T(1) / sum;
#pragma unroll
    for (int i = 0; i < Per; ++i) {
      int64_t k = lane + 32 * i;
      if (k < n) y[base + k * inner] = Log ? v[i] - lse : mulOf(expOf(v[i] - m), inv);
    }
  }
}

// The backward ops of rows of at most 32 * Per elements, a warp per row (as softmaxWarps).
template <typename T, bool Log, int Per>
__global__ void softmaxBackwardWarps(const T *dy, const T *y, T *dx, SoftmaxShape s) {
  const int lane = threadIdx.x & 31;
  const int64_t rows = s.outer * s.inner, n = s.n, inner = s.inner;
  const int64_t step = int64_t(gridDim.x) * (blockDim.x >> 5);
  for (int64_t r = int64_t(blockIdx.x) * (blockDim.x >> 5) + (threadIdx.x >> 5); r < rows; r += step) {
    const int64_t base = rowBase(r, s);
    T g[Per], v[Per];
    T dot = T(0);
#pragma unroll
    for (int i = 0; i < Per; ++i) {
      int64_t k = lane + 32 * i;
      g[i] = k < n ? dy[base + k * inner] : T(0);
      v[i] = k < n ? y[base + k * inner] : T(0);
      if (k < n) dot += Log ? g[i] : g[i] * v[i];
    }
    dot = warpReduce<false>(dot);
#pragma unroll
    for (int i = 0; i < Per; ++i) {
      int64_t k = lane + 32 * i;
      if (k < n) dx[base + k * inner] = Log ? g[i] - mulOf(expOf(v[i]), dot) : mulOf(v[i], g[i] - dot);
    }
  }
}

template <typename T, bool Log, int Per>
cudaError_t forwardWarps(const T *x, T *y, const SoftmaxPlan &p, cudaStream_t stream) {
  softmaxWarps<T, Log, Per><<<p.blocks, p.threads, 0, stream>>>(x, y, p.shape);
  return cudaGetLastError();
}

template <typename T, bool Log, int Per>
cudaError_t backwardWarps(const T *dy, const T *y, T *dx, const SoftmaxPlan &p, cudaStream_t stream) {
  softmaxBackwardWarps<T, Log, Per><<<p.blocks, p.threads, 0, stream>>>(dy, y, dx, p.shape);
  return cudaGetLastError();
}

template <typename T, bool Log>
cudaError_t forwardAs(const T *x, T *y, const SoftmaxPlan &p, cudaStream_t stream) {
  switch (p.mode) {
  case SoftmaxMode::Empty: return cudaSuccess;
  case SoftmaxMode::WarpRows:
    switch (p.perLane) {
    case 1: return forwardWarps<T, Log, 1>(x, y, p, stream);
    case 2: return forwardWarps<T, Log, 2>(x, y, p, stream);
    case 4: return forwardWarps<T, Log, 4>(x, y, p, stream);
    case 8: return forwardWarps<T, Log, 8>(x, y, p, stream);
    default: return forwardWarps<T, Log, 16>(x, y, p, stream);
    }
  case SoftmaxMode::BlockRows:
    softmaxRows<T, Log, BlockGroup><<<p.blocks, p.threads, 0, stream>>>(x, y, p.shape);
    return cudaGetLastError();
  case SoftmaxMode::Columns:
    softmaxRows<T, Log, ThreadGroup><<<p.blocks, p.threads, 0, stream>>>(x, y, p.shape);
    return cudaGetLastError();
  }
  return cudaErrorInvalidValue;
}

template <typename T, bool Log>
cudaError_t backwardAs(const T *dy, const T *y, T *dx, const SoftmaxPlan &p, cudaStream_t stream) {
  switch (p.mode) {
  case SoftmaxMode::Empty: return cudaSuccess;
  case SoftmaxMode::WarpRows:
    switch (p.perLane) {
    case 1: return backwardWarps<T, Log, 1>(dy, y, dx, p, stream);
    case 2: return backwardWarps<T, Log, 2>(dy, y, dx, p, stream);
    case 4: return backwardWarps<T, Log, 4>(dy, y, dx, p, stream);
    case 8: return backwardWarps<T, Log, 8>(dy, y, dx, p, stream);
    default: return backwardWarps<T, Log, 16>(dy, y, dx, p, stream);
    }
  case SoftmaxMode::BlockRows:
    softmaxBackwardRows<T, Log, BlockGroup><<<p.blocks, p.threads, 0, stream>>>(dy, y, dx, p.shape);
    return cudaGetLastError();
  case SoftmaxMode::Columns:
    softmaxBackwardRows<T, Log, ThreadGroup><<<p.blocks, p.threads, 0, stream>>>(dy, y, dx, p.shape);
    return cudaGetLastError();
  }
  return cudaErrorInvalidValue;
}

} // namespace

SoftmaxPlan planSoftmax(const SoftmaxShape &shape, int multiprocessors) {
  SoftmaxPlan p;
  p.shape = shape;
  const int64_t rows = shape.outer * shape.inner, n = shape.n;
  if (rows == 0 || n == 0) return p;
  // Enough blocks to fill the device several times over; the kernels stride over the rest.
  const int64_t most = int64_t(std::max(multiprocessors, 1)) * 64;
  auto blocksFor = [&](int64_t work, int64_t perBlock) {
    return unsigned(std::max<int64_t>(1, std::min((work + perBlock - 1) / perBlock, most)));
  };
  if (shape.inner > 1 && (rows >= 2048 || n < 64)) {
    // Rows a stride apart: neighbouring threads walk neighbouring rows, reading neighbouring
    // elements.
    p.mode = SoftmaxMode::Columns;
    p.threads = 256;
    p.blocks = blocksFor(rows, p.threads);
  } else if (n <= kSoftmaxWarpRow) {
    p.mode = SoftmaxMode::WarpRows;
    p.perLane = 1;
    while (32 * int64_t(p.perLane) < n) p.perLane *= 2;
    p.threads = 256;
    p.blocks = blocksFor(rows, p.threads / 32);
  } else {
    p.mode = SoftmaxMode::BlockRows;
    p.threads = n <= 2048 ? 128 : n <= 8192 ? 256 : n <= 32768 ? 512 : 1024;
    p.blocks = blocksFor(rows, 1);
  }
  return p;
}

cudaError_t launchSoftmax(const float *x, float *y, const SoftmaxPlan &p, bool log, cudaStream_t stream) {
  return log ? forwardAs<float, true>(x, y, p, stream) : forwardAs<float, false>(x, y, p, stream);
}

cudaError_t launchSoftmax(const double *x, double *y, const SoftmaxPlan &p, bool log, cudaStream_t stream) {
  return log ? forwardAs<double, true>(x, y, p, stream) : forwardAs<double, false>(x, y, p, stream);
}

cudaError_t launchSoftmaxBackward(const float *dy, const float *y, float *dx, const SoftmaxPlan &p,
                                  bool log, cudaStream_t stream) {
  return log ? backwardAs<float, true>(dy, y, dx, p, stream) : backwardAs<float, false>(dy, y, dx, p, stream);
}

cudaError_t launchSoftmaxBackward(const double *dy, const double *y, double *dx, const SoftmaxPlan &p,
                                  bool log, cudaStream_t stream) {
  return log ? backwardAs<double, true>(dy, y, dx, p, stream)
             : backwardAs<double, false>(dy, y, dx, p, stream);
}

} // namespace dtnn::cuda
