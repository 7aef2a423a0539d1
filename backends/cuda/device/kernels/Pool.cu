// The pooling ops (see Pool.h): one thread per result element, striding over
// the tensor; global_avgpool one warp per plane. Window sums run row by row
// in T, as the reference's, with each division rounded on its own.
#include "backends/cuda/device/kernels/Pool.h"
#include "backends/cuda/device/kernels/Common.cuh"

#include <algorithm>

namespace dtnn::cuda {

namespace {


// The input rows [r0, r1) and columns [c0, c1) of output (o, q)'s window, and its avgpool
// divisor, as the reference's window().
struct Window {
  int64_t r0, r1, c0, c1, divisor;
  __device__ bool holds(int64_t r, int64_t c) const { return r >= r0 && r < r1 && c >= c0 && c < c1; }
};

__device__ Window windowAt(const PoolGeom &g, int64_t o, int64_t q) {
  int64_t r0 = o * g.sh - g.padTop, c0 = q * g.sw - g.padLeft;
  int64_t r1 = min(r0 + g.kh, g.h + g.padBottom), c1 = min(c0 + g.kw, g.w + g.padRight);
  const int64_t padded = (r1 - r0) * (c1 - c0);
  r0 = max(r0, int64_t(0)), c0 = max(c0, int64_t(0));
  r1 = min(r1, g.h), c1 = min(c1, g.w);
  return {r0, r1, c0, c1, g.countPad ? padded : (r1 - r0) * (c1 - c0)};
}

// The index in the plane xp of the first maximum of a window (a NaN counts as the maximum).
template <typename T> __device__ int64_t argmaxOf(const T *xp, const PoolGeom &g, const Window &win) {
  T best = T(-INFINITY);
  int64_t at = win.r0 * g.w + win.c0;
  for (int64_t r = win.r0; r < win.r1; ++r)
    for (int64_t c = win.c0; c < win.c1; ++c) {
      const T v = xp[r * g.w + c];
      if (v > best || isnan(v)) best = v, at = r * g.w + c;
    }
  return at;
}

// The outputs along one axis whose windows (start o * stride - pad, size k) may hold input
// position r: [first, last], clipped to [0, outputs).
struct Span {
  int64_t first, last;
};
__device__ Span windowsHolding(int64_t r, int64_t k, int64_t stride, int64_t pad, int64_t outputs) {
  const int64_t past = r + pad - k; // a window starting at or before this ends before r
  const int64_t first = past < 0 ? 0 : past / stride + 1;
  return {first, min(outputs - 1, (r + pad) / stride)};
}

template <typename T> __global__ void maxPoolKernel(const T *x, T *y, PoolGeom g, int64_t total) {
  const int64_t yPlane = g.oh * g.ow;
  DTNN_GRID_LOOP(i, total) {
    const int64_t p = i / yPlane, o = (i - p * yPlane) / g.ow, q = i - p * yPlane - o * g.ow;
    const T *xp = x + p * g.h * g.w;
    y[i] = xp[argmaxOf(xp, g, windowAt(g, o, q))];
  }
}

template <typename T> __global__ void avgPoolKernel(const T *x, T *y, PoolGeom g, int64_t total) {
  const int64_t yPlane = g.oh * g.ow;
  DTNN_GRID_LOOP(i, total) {
    const int64_t p = i / yPlane, o = (i - p * yPlane) / g.ow, q = i - p * yPlane - o * g.ow;
    const T *xp = x + p * g.h * g.w;
    const Window win = windowAt(g, o, q);
    T s = T(0);
    for (int64_t r = win.r0; r < win.r1; ++r)
      for (int64_t c = win.c0; c < win.c1; ++c) s = addRn(s, xp[r * g.w + c]);
    y[i] = divRn(s, T(win.divisor));
  }
}

// dx of maxpool (Max) or avgpool: each dx element the sum, from 0 in the order of the windows,
// of the shares of the windows holding it.
template <typename T, bool Max>
__global__ void poolBackwardKernel(const T *dy, const T *x, T *dx, PoolGeom g, int64_t total) {
  const int64_t xPlane = g.h * g.w;
  DTNN_GRID_LOOP(i, total) {
    const int64_t p = i / xPlane, r = (i - p * xPlane) / g.w, c = i - p * xPlane - r * g.w;
    const T *dyp = dy + p * g.oh * g.ow;
    const Span rows = windowsHolding(r, g.kh, g.sh, g.padTop, g.oh);
    const Span cols = windowsHolding(c, g.kw, g.sw, g.padLeft, g.ow);
    T sum = T(0);
    for (int64_t o = rows.first; o <= rows.last; ++o)
      for (int64_t q = cols.first; q <= cols.last; ++q) {
        const Window win = windowAt(g, o, q);
        if (!win.holds(r, c)) continue;
        const T d = dyp[o * g.ow + q];
        if (!Max) sum = addRn(sum, divRn(d, T(win.divisor)));
        else if (argmaxOf(x + p * xPlane, g, win) == r * g.w + c) sum = addRn(sum, d);
      }
    dx[i] = sum;
  }
}

// One warp per plane: lane l sums elements l, l + 32, ... in order, the lanes' sums combined by
// a butterfly (every lane ends with the same bits, as a + b == b + a).
template <typename T> __global__ void globalAvgPoolKernel(const T *x, T *y, int64_t planes, int64_t plane) {
  const int lane = threadIdx.x & 31;
  const int64_t warps = blockDim.x >> 5, step = int64_t(gridDim.x) * warps;
  for (int64_t p = int64_t(blockIdx.x) * warps + (threadIdx.x >> 5); p < planes; p += step) {
    const T *xp = x + p * plane;
    T s = T(0);
    for (int64_t i = lane; i < plane; i += 32) s = addRn(s, xp[i]);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) s = addRn(s, __shfl_xor_sync(0xffffffffu, s, o));
    if (lane == 0) y[p] = divRn(s, T(plane));
  }
}

template <typename T>
__global__ void globalAvgPoolBackwardKernel(const T *dy, T *dx, int64_t plane, int64_t total) {
  DTNN_GRID_LOOP(i, total) dx[i] = divRn(dy[i / plane], T(plane));
}

} // namespace

template <typename T> cudaError_t launchMaxPool(const T *x, T *y, const PoolGeom &g, cudaStream_t stream) {
  const int64_t total = g.planes * g.oh * g.ow;
  if (total == 0) return cudaSuccess;
  maxPoolKernel<T><<<blocksFor(total, kThreads), kThreads, 0, stream>>>(x, y, g, total);
  return cudaGetLastError();
}

template <typename T>
cudaError_t launchMaxPoolBackward(const T *dy, const T *x, T *dx, const PoolGeom &g, cudaStream_t stream) {
  const int64_t total = g.planes * g.h * g.w;
  if (total == 0) return cudaSuccess;
  poolBackwardKernel<T, true><<<blocksFor(total, kThreads), kThreads, 0, stream>>>(dy, x, dx, g, total);
  return cudaGetLastError();
}

template <typename T> cudaError_t launchAvgPool(const T *x, T *y, const PoolGeom &g, cudaStream_t stream) {
  const int64_t total = g.planes * g.oh * g.ow;
  if (total == 0) return cudaSuccess;
  avgPoolKernel<T><<<blocksFor(total, kThreads), kThreads, 0, stream>>>(x, y, g, total);
  return cudaGetLastError();
}

template <typename T>
cudaError_t launchAvgPoolBackward(const T *dy, T *dx, const PoolGeom &g, cudaStream_t stream) {
  const int64_t total = g.planes * g.h * g.w;
  if (total == 0) return cudaSuccess;
  poolBackwardKernel<T, false><<<blocksFor(total, kThreads), kThreads, 0, stream>>>(dy, nullptr, dx, g,
                                                                                     total);
  return cudaGetLastError();
}

template <typename T>
cudaError_t launchGlobalAvgPool(const T *x, T *y, int64_t planes, int64_t plane, cudaStream_t stream) {
  if (planes == 0) return cudaSuccess;
  globalAvgPoolKernel<T><<<blocksFor(planes, kThreads / 32), kThreads, 0, stream>>>(x, y, planes, plane);
  return cudaGetLastError();
}

template <typename T>
cudaError_t launchGlobalAvgPoolBackward(const T *dy, T *dx, int64_t planes, int64_t plane,
                                        cudaStream_t stream) {
  const int64_t total = planes * plane;
  if (total == 0) return cudaSuccess;
  globalAvgPoolBackwardKernel<T><<<blocksFor(total, kThreads), kThreads, 0, stream>>>(dy, dx, plane, total);
  return cudaGetLastError();
}

#define DTNN_POOL_INSTANCES(T)                                                                     \
  template cudaError_t launchMaxPool<T>(const T *, T *, const PoolGeom &, cudaStream_t);           \
  template cudaError_t launchMaxPoolBackward<T>(const T *, const T *, T *, const PoolGeom &,       \
                                                cudaStream_t);                                     \
  template cudaError_t launchAvgPool<T>(const T *, T *, const PoolGeom &, cudaStream_t);           \
  template cudaError_t launchAvgPoolBackward<T>(const T *, T *, const PoolGeom &, cudaStream_t);   \
  template cudaError_t launchGlobalAvgPool<T>(const T *, T *, int64_t, int64_t, cudaStream_t);     \
  template cudaError_t launchGlobalAvgPoolBackward<T>(const T *, T *, int64_t, int64_t,            \
                                                      cudaStream_t);
DTNN_POOL_INSTANCES(float)
DTNN_POOL_INSTANCES(double)

} // namespace dtnn::cuda
