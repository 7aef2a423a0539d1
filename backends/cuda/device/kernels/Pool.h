// The pooling ops on the device, as backends/reference/Pool.cpp computes
// them over [N,C,H,W] planes: maxpool, avgpool (with count_pad), their
// backward ops, global_avgpool and its backward op. A window starts at
// o * stride - pad and is clipped to the input; with ceil mode the last
// window may reach past the bottom or right padding. avgpool with count_pad
// divides by the window's size inside the padded input, otherwise by the
// number of input elements it covers. maxpool takes the first maximum of a
// window in row-major order (a NaN counts as the maximum, the last NaN
// winning, as the reference's scan lets it). Any padding, asymmetric too,
// and ceil mode are taken.
//
// The backward ops gather instead of scattering: one thread per dx element
// walks the windows that hold it in the reference's order (output rows,
// then columns), recomputing maxpool's choice of each, and adds their
// shares from 0 in that order, so that dx has the reference's bits and no
// atomics are needed.
#pragma once

#include <cstdint>
#include <cuda_runtime.h>

namespace dtnn::cuda {

// The sizes, window and padding of one maxpool or avgpool (and of its backward op).
struct PoolGeom {
  int64_t planes = 0, h = 0, w = 0; // x [N,C,H,W], planes = N*C
  int64_t oh = 0, ow = 0;           // y [N,C,OH,OW]
  int64_t kh = 1, kw = 1, sh = 1, sw = 1;
  int64_t padTop = 0, padLeft = 0, padBottom = 0, padRight = 0;
  bool countPad = true; // avgpool: the divisor counts the padding
};

// y = the first maximum of each window of x.
template <typename T> cudaError_t launchMaxPool(const T *x, T *y, const PoolGeom &g, cudaStream_t stream);

// dx = maxpool_backward(dy, x): each dy element added to its window's first maximum.
template <typename T>
cudaError_t launchMaxPoolBackward(const T *dy, const T *x, T *dx, const PoolGeom &g, cudaStream_t stream);

// y = the sum of each window of x (row by row, in T) / its divisor.
template <typename T> cudaError_t launchAvgPool(const T *x, T *y, const PoolGeom &g, cudaStream_t stream);

// dx = avgpool_backward(dy): each dy element / its window's divisor added to every input element
// of the window.
template <typename T>
cudaError_t launchAvgPoolBackward(const T *dy, T *dx, const PoolGeom &g, cudaStream_t stream);

// y[p] = the sum of plane p of x (`plane` > 0 elements) / plane, for `planes` planes; each plane
// summed by a warp, its lanes' sums combined by a butterfly.
template <typename T>
cudaError_t launchGlobalAvgPool(const T *x, T *y, int64_t planes, int64_t plane, cudaStream_t stream);

// dx[p, i] = dy[p] / plane over every element i of each plane p.
template <typename T>
cudaError_t launchGlobalAvgPoolBackward(const T *dy, T *dx, int64_t planes, int64_t plane,
                                        cudaStream_t stream);

} // namespace dtnn::cuda
