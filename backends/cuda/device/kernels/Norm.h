// The batch normalization ops on the device, as backends/reference/Norm.cpp
// and NormKernels.h compute them: batchnorm (inference), batchnorm_train,
// batchnorm_backward, batchnorm_backward_frozen, batchnorm_fold and
// moving_average. An input [N,C] or [N,C,H,W] is seen as [N,C,S], S the
// spatial size (1 for [N,C]).
//
// The per-channel sums are taken in double, as the reference takes them, in
// an order fixed by the sizes alone: each channel's N*S elements are cut
// into segments (their number a function of N*S), each summed by one block
// (a fixed tree) into a workspace slot, and the segments then added in order
// by one thread per channel; no atomics, so every run gives the same bits.
// Everything else is the reference's arithmetic in its order, each
// operation rounded on its own (no fused multiply-adds). Each element of a
// result is written by the thread that has just read the operands' elements
// at its offset, and after every other read of them, so a result may take
// the storage of an operand.
#pragma once

#include <cstdint>
#include <cuda_runtime.h>

namespace dtnn::cuda {

// The [N,C,S] view of a batch norm's input.
struct NormShape {
  int64_t n = 0, c = 0, s = 1;
  // The elements of one channel.
  __host__ __device__ int64_t count() const { return n * s; }
};

// The fused activation of batchnorm and batchnorm_train (their `act` attribute), applied to y.
enum class NormAct { None, Relu, Relu6, Sigmoid, Tanh };

// The most segments a channel's sums are cut into.
constexpr int64_t kMaxNormSegments = 128;

// The workspace of the ops with sums (batchnorm_train, batchnorm_backward,
// batchnorm_backward_frozen; ops/NormOps.cpp sizes it): two doubles for each of the
// kMaxNormSegments segments of each channel, then two doubles per channel:
// 16 (kMaxNormSegments + 1) bytes a channel.

// The per-channel operands of batchnorm and batchnorm_fold: gamma, beta, mean and variance.
template <typename T> struct NormParams {
  const T *gamma, *beta, *mean, *var;
};

// batchnorm: y = x * scale + (beta - mean * scale), scale = gamma / sqrt(var + eps) (all in T),
// then act.
template <typename T>
cudaError_t launchBatchNorm(const T *x, NormParams<T> p, T *y, NormShape s, T eps, NormAct act,
                            cudaStream_t stream);

// batchnorm_train's operands (the running statistics written in place) and results.
template <typename T> struct NormTrainArgs {
  const T *x, *gamma, *beta;
  T *runMean, *runVar;
  T *y, *mean, *invstd;
};

// batchnorm_train: the batch mean m and the biased variance v of each channel (two passes over
// x, in double: the sum, then the squared deviations from m), mean = T(m) and invstd =
// T(1 / sqrt(v + eps)); y = (x - mean) * (gamma * invstd) + beta, then act; and the running
// statistics updated in place, r = T((1 - momentum) r + momentum stat) in double, with the
// unbiased variance (sum of squared deviations / (count - 1); v for a count of 1). `work` is the
// workspace above.
template <typename T>
cudaError_t launchBatchNormTrain(const NormTrainArgs<T> &a, NormShape s, double eps, double momentum,
                                 NormAct act, void *work, cudaStream_t stream);

// The gradients dx, dgamma and dbeta of the backward ops.
template <typename T> struct NormGrads {
  T *dx, *dgamma, *dbeta;
};

// batchnorm_backward from the batch mean and invstd: with xh = (x - mean) * invstd (in T),
// dbeta = sum(dy), dgamma = sum(dy * xh) in double, and dx = gamma * invstd * (dy - T(dbeta /
// count) - xh * T(dgamma / count)). `work` is the workspace above.
template <typename T>
cudaError_t launchBatchNormBackward(const T *dy, const T *x, const T *gamma, const T *mean,
                                    const T *invstd, NormGrads<T> g, NormShape s, void *work,
                                    cudaStream_t stream);

// batchnorm_backward_frozen from fixed statistics: invstd = 1 / sqrt(var + eps) in T,
// dx = dy * (gamma * invstd), dgamma and dbeta as batchnorm_backward's. `work` is the
// workspace above.
template <typename T>
cudaError_t launchBatchNormBackwardFrozen(const T *dy, const T *x, const T *gamma, const T *mean,
                                          const T *var, T eps, NormGrads<T> g, NormShape s,
                                          void *work, cudaStream_t stream);

// batchnorm_fold of a weight [K, per...] (`per` elements per output channel): with
// s = gamma / sqrt(var + eps), wf = w * s along dim 0 and bf = (bias - mean) * s + beta, a
// null bias read as 0.
template <typename T>
cudaError_t launchBatchNormFold(const T *w, NormParams<T> p, const T *bias, T *wf, T *bf,
                                int64_t k, int64_t per, T eps, cudaStream_t stream);

// moving_average: buf = T((1 - momentum) buf + momentum value) in double over n elements, in
// place.
template <typename T>
cudaError_t launchMovingAverage(T *buf, const T *value, int64_t n, double momentum, cudaStream_t stream);

} // namespace dtnn::cuda
