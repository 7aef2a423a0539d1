// The convolutions' own kernels beside cuDNN: the epilogue of conv2d (bias,
// residual and fused activation, as backends/reference/Conv.cpp applies them
// to each result plane), the explicit zero padding of an input (and the
// crop of a padded gradient) for asymmetric padding, which cuDNN's
// descriptors cannot express, and the bias gradient as a deterministic
// two-stage sum.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cuda_runtime.h>

namespace dtnn::cuda {

// conv2d's fused activation (its `act` attribute).
enum class ConvAct { None, Relu, Relu6, Sigmoid, Tanh };

// y[i] = act(y[i] + bias[channel of i] + residual[i]) over y [n, channels, plane] with
// `total` elements; bias and residual may each be null (not added).
cudaError_t launchConvEpilogue(float *y, const float *bias, const float *residual, int64_t total,
                               int64_t plane, int64_t channels, ConvAct act, cudaStream_t stream);

// dst[p, i, j] = src[p, i + offH, j + offW] where that lies inside src [planes, srcH, srcW],
// else 0, for dst [planes, dstH, dstW]: a zero-padded copy for negative offsets, a crop for
// positive ones.
cudaError_t launchWindowCopy(float *dst, const float *src, int64_t planes, int64_t dstH, int64_t dstW,
                             int64_t srcH, int64_t srcW, int64_t offH, int64_t offW, cudaStream_t stream);

// The most segments the bias gradient splits a channel's n * plane elements into; its partial
// sums take channels * kMaxBiasGradSegments floats of workspace at most.
constexpr int64_t kMaxBiasGradSegments = 256;

// How the bias gradient cuts one channel: `images` ranges of images times `planeParts` ranges
// of each plane; a function of the sizes alone, so that the sums are the same on every run.
struct BiasGradSplit {
  int64_t images = 1, planeParts = 1;
  int64_t segments() const { return images * planeParts; }
};

inline BiasGradSplit biasGradSplit(int64_t n, int64_t plane) {
  constexpr int64_t kPerSegment = 16384; // elements a block of 256 threads sums at least
  int64_t total = n * plane;
  int64_t s = std::max<int64_t>(1, std::min(kMaxBiasGradSegments, total / kPerSegment));
  BiasGradSplit split;
  split.images = std::max<int64_t>(1, std::min(n, s));
  split.planeParts = std::max<int64_t>(1, std::min(s / split.images, (plane + 1023) / 1024));
  return split;
}

// db[c] = sum over images and the plane of dy [n, channels, plane]: each segment of a channel
// summed by one block (a fixed tree) into `partial` (channels * segments floats; unused with
// one segment), then the segments added in order. n * plane must be positive.
cudaError_t launchBiasGrad(const float *dy, float *db, float *partial, int64_t n, int64_t channels,
                           int64_t plane, cudaStream_t stream);

} // namespace dtnn::cuda
