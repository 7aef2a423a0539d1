// The Reduce family's kernels, as the reference evaluates them
// (backends/reference/Reduce.cpp, Elementwise.cpp):
//   reduce_sum           y = the sum of x over the reduced dimensions, in double, rounded once;
//   reduce_max           y = their largest element, NaN when one is NaN;
//   reduce_max_backward  dx = dy / k where x equals its maximum y (k elements do), else 0;
//   broadcast_like       x repeated along the dimensions it has of size 1 (or lacks);
//   fill, count_like     every element set to one value (the caller's bits).
// The reductions split their work as ReduceSplit.h says: each segment is
// combined by one warp (lane l takes elements l, l + 32, .. of the segment,
// then a butterfly adds the lanes) or one thread, into a partial result in
// the workspace (`partial`: ReduceGeom::partialBytes()), and a second kernel
// combines each output's partials in segment order; reduce_sum and
// reduce_max write their result directly when there is one segment. The
// order depends on the sizes only: every run gives the same bits.
#pragma once

#include "backends/cuda/device/kernels/ReduceSplit.h"

#include <cstdint>
#include <cuda_runtime.h>

namespace dtnn::cuda {

// In f32 and f64.
template <typename T>
cudaError_t launchReduceSum(const T *x, T *y, double *partial, const ReduceGeom &g, cudaStream_t stream);
template <typename T>
cudaError_t launchReduceMax(const T *x, T *y, double *partial, const ReduceGeom &g, cudaStream_t stream);
// `ties` (always needed): the elements equal to the maximum, per output and segment.
template <typename T>
cudaError_t launchReduceMaxBackward(const T *dy, const T *x, const T *y, T *dx, double *ties,
                                    const ReduceGeom &g, cudaStream_t stream);

// The most dimensions of a broadcast.
constexpr int kMaxBroadcastDims = 16;

// A broadcast to `total` elements over merged dimensions size[0..rank) (row-major, outermost
// first): result element i takes the element of x at the row-major index of its coordinates in
// the kept dimensions alone (x has size 1 in the others).
struct BroadcastGeom {
  int rank = 0;
  int64_t size[kMaxBroadcastDims] = {};
  bool kept[kMaxBroadcastDims] = {};
  int64_t total = 0;
};

// broadcast_like of elements of elemBytes (1, 4 or 8) bytes.
cudaError_t launchBroadcast(const void *x, void *y, const BroadcastGeom &g, int elemBytes,
                            cudaStream_t stream);

// Sets the n elements of elemBytes (1, 4 or 8) bytes at y to the low elemBytes bytes of `bits`.
cudaError_t launchFill(void *y, int64_t n, int elemBytes, uint64_t bits, cudaStream_t stream);

} // namespace dtnn::cuda
