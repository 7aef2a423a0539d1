// What the batch normalization kernels of Norm.cpp and SyncNorm.cpp share:
// the [N,C,S] view of an input, the per-channel sums of a gradient, and the
// plain kernels that SyncNorm.cpp's fall back to when sync=false.
#pragma once

#include "backends/reference/KernelTable.h"

#include <utility>

namespace dtnn::reference {

// The [N,C,S] view of a batchnorm input: S is the spatial size (1 for [N,C]).
struct NormShape {
  int64_t n, c, s;
  explicit NormShape(const TensorView &x) : n(x.dim(0)), c(x.dim(1)) {
    s = n * c == 0 ? 0 : x.numel() / (n * c);
  }
  // The number of elements per channel.
  int64_t count() const { return n * s; }
  // Calls f(offset) for the start of each contiguous run of channel ch.
  template <typename F> void forChannel(int64_t ch, F &&f) const {
    for (int64_t i = 0; i < n; ++i) f((i * c + ch) * s);
  }
};

// Σdy and Σdy·x̂ over channel ch, x̂ = (x - mean)·invstd, in double.
template <typename T>
std::pair<double, double> gradientSums(const NormShape &l, const T *dy, const T *x, T mean,
                                       T invstd, int64_t ch) {
  double sdy = 0, sdyx = 0;
  l.forChannel(ch, [&](int64_t o) {
    for (int64_t k = 0; k < l.s; ++k) {
      sdy += dy[o + k];
      sdyx += dy[o + k] * ((x[o + k] - mean) * invstd);
    }
  });
  return {sdy, sdyx};
}

template <typename T> void batchNormTrainKernel(const KernelArgs &a);
template <typename T> void batchNormBackwardKernel(const KernelArgs &a);

} // namespace dtnn::reference
