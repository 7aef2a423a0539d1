// Reference kernels of the batch normalization ops declared in
// ir/ops/Norm.cpp, moving_average included. The input is [N,C] or [N,C,H,W],
// seen as [N,C,S] with S the spatial size (1 for [N,C]). Statistics are
// reduced per channel inside one parallel iteration, in double precision, so
// the results do not depend on the thread count.
#include "backends/reference/KernelUtil.h"
#include "backends/reference/NormKernels.h"

#include <cmath>
#include <vector>

namespace dtnn::reference {

namespace {

// Inference: y = (x - mean) * gamma / sqrt(var + eps) + beta, then the
// fused activation.
template <typename T> void batchNormKernel(const KernelArgs &a) {
  NormShape l(a.in[0]);
  const T *x = a.in[0].as<T>(), *gamma = a.in[1].as<T>(), *beta = a.in[2].as<T>();
  const T *mean = a.in[3].as<T>(), *var = a.in[4].as<T>();
  T *y = a.out[0].as<T>();
  T eps = static_cast<T>(a.op->attrs().getFloat("eps"));
  std::vector<T> scale(l.c), shift(l.c);
  for (int64_t ch = 0; ch < l.c; ++ch) {
    scale[ch] = gamma[ch] / std::sqrt(var[ch] + eps);
    shift[ch] = beta[ch] - mean[ch] * scale[ch];
  }
  FusedAct act = fusedActOf(*a.op);
  parallelFor(l.n, [&](int64_t i) {
    for (int64_t ch = 0; ch < l.c; ++ch) {
      int64_t o = (i * l.c + ch) * l.s;
      for (int64_t k = 0; k < l.s; ++k) y[o + k] = x[o + k] * scale[ch] + shift[ch];
      applyFusedAct(act, y + o, l.s);
    }
  });
}

} // namespace

// Training: normalizes with the batch mean and biased variance per channel,
// returns the mean and 1/sqrt(var + eps), and updates the running statistics
// in place as PyTorch does: r = (1 - momentum) * r + momentum * stat, with
// the unbiased variance for the running variance.
template <typename T> void batchNormTrainKernel(const KernelArgs &a) {
  NormShape l(a.in[0]);
  const T *x = a.in[0].as<T>();
  double count = static_cast<double>(l.count());
  parallelFor(l.c, [&](int64_t ch) {
    double mean = count ? channelSum(l, x, ch) / count : 0;
    normalizeChannel<T>(l, a, ch, mean, squaredDeviations(l, x, mean, ch), count);
  });
}

// Gradient of batchnorm_train from the batch mean and invstd:
// dbeta = sum(dy), dgamma = sum(dy * xhat),
// dx = gamma * invstd * (dy - dbeta / M - xhat * dgamma / M), M = N*S.
template <typename T> void batchNormBackwardKernel(const KernelArgs &a) {
  NormShape l(a.in[1]);
  const T *dy = a.in[0].as<T>(), *x = a.in[1].as<T>(), *gamma = a.in[2].as<T>();
  const T *mean = a.in[3].as<T>(), *invstd = a.in[4].as<T>();
  T *dx = a.out[0].as<T>(), *dgamma = a.out[1].as<T>(), *dbeta = a.out[2].as<T>();
  int64_t count = l.count();
  parallelFor(l.c, [&](int64_t ch) {
    T m = mean[ch], inv = invstd[ch];
    auto [sdy, sdyx] = gradientSums(l, dy, x, m, inv, ch);
    dbeta[ch] = static_cast<T>(sdy);
    dgamma[ch] = static_cast<T>(sdyx);
    if (!count) return;
    T scale = gamma[ch] * inv;
    T meanDy = static_cast<T>(sdy / count), meanDyX = static_cast<T>(sdyx / count);
    l.forChannel(ch, [&](int64_t o) {
      for (int64_t k = 0; k < l.s; ++k)
        dx[o + k] = scale * (dy[o + k] - meanDy - (x[o + k] - m) * inv * meanDyX);
    });
  });
}

namespace {

// Gradient of inference batchnorm, whose statistics are constants:
// dx = dy * gamma * invstd, dgamma = sum(dy * xhat), dbeta = sum(dy).
template <typename T> void batchNormBackwardFrozenKernel(const KernelArgs &a) {
  NormShape l(a.in[1]);
  const T *dy = a.in[0].as<T>(), *x = a.in[1].as<T>(), *gamma = a.in[2].as<T>();
  const T *mean = a.in[3].as<T>(), *var = a.in[4].as<T>();
  T *dx = a.out[0].as<T>(), *dgamma = a.out[1].as<T>(), *dbeta = a.out[2].as<T>();
  T eps = static_cast<T>(a.op->attrs().getFloat("eps"));
  parallelFor(l.c, [&](int64_t ch) {
    T m = mean[ch], inv = 1 / std::sqrt(var[ch] + eps), scale = gamma[ch] * inv;
    double sdy = 0, sdyx = 0;
    l.forChannel(ch, [&](int64_t o) {
      for (int64_t k = 0; k < l.s; ++k) {
        sdy += dy[o + k];
        sdyx += dy[o + k] * ((x[o + k] - m) * inv);
        dx[o + k] = dy[o + k] * scale;
      }
    });
    dbeta[ch] = static_cast<T>(sdy);
    dgamma[ch] = static_cast<T>(sdyx);
  });
}

// weight' = weight * s along dim 0 and bias' = (bias - mean) * s + beta with
// s = gamma / sqrt(var + eps): an inference batchnorm folded into the layer
// before it. The scale is computed as batchnorm's kernel computes its
// scale.
template <typename T> void batchNormFoldKernel(const KernelArgs &a) {
  const T *w = a.in[0].as<T>(), *gamma = a.in[1].as<T>(), *beta = a.in[2].as<T>();
  const T *mean = a.in[3].as<T>(), *var = a.in[4].as<T>();
  const T *bias = a.in.size() > 5 ? a.in[5].as<T>() : nullptr;
  T *wf = a.out[0].as<T>(), *bf = a.out[1].as<T>();
  T eps = static_cast<T>(a.op->attrs().getFloat("eps"));
  int64_t k = a.in[0].dim(0), per = a.in[0].numel() / std::max<int64_t>(1, k);
  parallelFor(k, [&](int64_t ch) {
    T s = gamma[ch] / std::sqrt(var[ch] + eps);
    for (int64_t i = 0; i < per; ++i) wf[ch * per + i] = w[ch * per + i] * s;
    bf[ch] = ((bias ? bias[ch] : T(0)) - mean[ch]) * s + beta[ch];
  });
}

// buf = (1 - momentum) * buf + momentum * value in place, in double as
// batchnorm_train updates its running statistics (a vector per channel:
// one thread).
template <typename T> void movingAverageKernel(const KernelArgs &a) {
  T *buf = a.in[0].as<T>();
  const T *value = a.in[1].as<T>();
  double momentum = a.op->attrs().getFloat("momentum");
  for (int64_t i = 0, n = a.in[0].numel(); i < n; ++i)
    buf[i] = static_cast<T>((1 - momentum) * buf[i] + momentum * value[i]);
}

} // namespace

void registerNormKernels(KernelTable &t) {
  DTNN_REF_KERNEL(t, "batchnorm", batchNormKernel);
  // batchnorm_train and batchnorm_backward: SyncNorm.cpp.
  DTNN_REF_KERNEL(t, "batchnorm_backward_frozen", batchNormBackwardFrozenKernel);
  DTNN_REF_KERNEL(t, "batchnorm_fold", batchNormFoldKernel);
  DTNN_REF_KERNEL(t, "moving_average", movingAverageKernel);
}

template void batchNormTrainKernel<float>(const KernelArgs &);
template void batchNormTrainKernel<double>(const KernelArgs &);
template void batchNormBackwardKernel<float>(const KernelArgs &);
template void batchNormBackwardKernel<double>(const KernelArgs &);


} // namespace dtnn::reference
