// What the batch normalization kernels of Norm.cpp and SyncNorm.cpp share:
// the [N,C,S] view of an input, the per-channel sums of a gradient, and the
// plain kernels that SyncNorm.cpp's fall back to when sync=false.
#pragma once

#include "backends/reference/FusedActivation.h"
#include "backends/reference/KernelTable.h"

#include <cmath>
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

// Σx and Σ(x - mean)² over channel ch, in double.
template <typename T> double channelSum(const NormShape &l, const T *x, int64_t ch) {
  double sum = 0;
  l.forChannel(ch, [&](int64_t o) {
    for (int64_t k = 0; k < l.s; ++k) sum += x[o + k];
  });
  return sum;
}
template <typename T>
double squaredDeviations(const NormShape &l, const T *x, double mean, int64_t ch) {
  double sq = 0;
  l.forChannel(ch, [&](int64_t o) {
    for (int64_t k = 0; k < l.s; ++k) sq += (x[o + k] - mean) * (x[o + k] - mean);
  });
  return sq;
}

// The rest of batchnorm_train for channel ch, from its batch statistics
// (`sq` is Σ(x - mean)² over `count` elements): writes y, the mean and
// 1/sqrt(var + eps), and updates the running statistics as PyTorch does,
// r = (1 - momentum)·r + momentum·stat, with the unbiased variance.
template <typename T>
void normalizeChannel(const NormShape &l, const KernelArgs &a, int64_t ch, double mean, double sq,
                      double count) {
  const T *x = a.in[0].as<T>(), *gamma = a.in[1].as<T>(), *beta = a.in[2].as<T>();
  T *runMean = a.in[3].as<T>(), *runVar = a.in[4].as<T>();
  T *y = a.out[0].as<T>();
  double eps = a.op->attrs().getFloat("eps");
  double momentum = a.op->attrs().getFloat("momentum");
  double var = count ? sq / count : 0;
  double unbiased = count > 1 ? sq / (count - 1) : var;
  T m = static_cast<T>(mean), inv = static_cast<T>(1 / std::sqrt(var + eps));
  a.out[1].as<T>()[ch] = m;
  a.out[2].as<T>()[ch] = inv;
  T scale = gamma[ch] * inv, b = beta[ch];
  FusedAct act = fusedActOf(*a.op);
  l.forChannel(ch, [&](int64_t o) {
    for (int64_t k = 0; k < l.s; ++k) y[o + k] = (x[o + k] - m) * scale + b;
    applyFusedAct(act, y + o, l.s);
  });
  runMean[ch] = static_cast<T>((1 - momentum) * runMean[ch] + momentum * mean);
  runVar[ch] = static_cast<T>((1 - momentum) * runVar[ch] + momentum * unbiased);
}

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
