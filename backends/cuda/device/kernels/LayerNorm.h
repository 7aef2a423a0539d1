// layernorm and layernorm_backward on the device, as the reference evaluates
// them (backends/reference/LayerNorm.cpp): x is [rows, width], each row
// normalized by its own mean and 1 / sqrt(var + eps), the statistics summed
// in double in two passes (the mean, then the squares about it), every
// result computed in double and rounded once to the type. A row is covered
// by a warp (rows of at most kLayerNormWarpRow elements) or by a block; the
// sums along it run in an order fixed by the sizes, so every run gives the
// same bits. dgamma and dbeta are column sums over the rows: each segment of
// rows summed in row order into partial sums (in double), then the partial
// sums added in segment order. Instantiated for float and double.
#pragma once

#include <cstdint>
#include <cuda_runtime.h>

namespace dtnn::cuda {

// The longest row a warp takes.
constexpr int64_t kLayerNormWarpRow = 1024;

enum class LayerNormMode { Empty, WarpRows, BlockRows };

// The launch geometry of x [rows, width], fixed when the kernel is made.
struct LayerNormPlan {
  int64_t rows = 0, width = 1;
  double eps = 1e-5;
  LayerNormMode mode = LayerNormMode::Empty;
  int threads = 256;
  unsigned blocks = 1;
};

// The geometry for x [rows, width] on a device of `multiprocessors` SMs.
LayerNormPlan planLayerNorm(int64_t rows, int64_t width, double eps, int multiprocessors);

// y = (x - mean) * invstd * gamma + beta per row, or without gamma and beta (both null)
// (x - mean) * invstd. y may be x.
template <typename T>
cudaError_t launchLayerNorm(const T *x, const T *gamma, const T *beta, T *y, const LayerNormPlan &p,
                            cudaStream_t stream);

// dx = invstd (g - mean(g) - xhat mean(g xhat)) per row, with g = dy gamma (dy without gamma:
// null) and xhat = (x - mean) invstd; when `stats` is not null, row r's mean and invstd are
// written to stats[2r] and stats[2r + 1].
template <typename T>
cudaError_t launchLayerNormBackward(const T *dy, const T *x, const T *gamma, T *dx, double *stats,
                                    const LayerNormPlan &p, cudaStream_t stream);

// dgamma[j] = the sum over rows r of dy[r, j] (x[r, j] - mean_r) invstd_r and dbeta[j] that of
// dy[r, j], with the statistics launchLayerNormBackward wrote: the rows cut into `segments`
// (1 to 65535) ranges of ceil(rows / segments) rows, each summed in order into `partial`
// [2, segments, width] (doubles), then those summed in segment order.
template <typename T>
cudaError_t launchLayerNormParamGrads(const T *dy, const T *x, const double *stats, T *dgamma, T *dbeta,
                                      double *partial, int64_t rows, int64_t width, int64_t segments,
                                      cudaStream_t stream);

} // namespace dtnn::cuda
