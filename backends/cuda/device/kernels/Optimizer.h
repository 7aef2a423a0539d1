// The optimizer updates and their per-step coefficients on the device, as
// backends/reference/Optimizer.cpp computes them: the per-step scalars in
// double from the learning rate and the step count (device scalars, read on
// the device by one thread of each block), rounded to the parameter's type,
// and the elementwise arithmetic in that type in the reference's order of
// operations, each operation rounded on its own (no fused multiply-adds).
#pragma once

#include <cstdint>
#include <cuda_runtime.h>

namespace dtnn::cuda {

// A device scalar of either floating type (the learning rate).
struct LrRef {
  const void *data = nullptr;
  bool isDouble = false;
};

// sgd_update's attributes, rounded to the parameter's type where the reference rounds them.
template <typename T> struct SgdParams {
  T momentum, keep, weightDecay; // keep: 1 - dampening
  bool nesterov;
};

// adam_update's and adamw_update's: the moments' factors, eps, the weight decay added to the
// gradient (0 for AdamW) and, in double, what the per-step scalars are computed from.
template <typename T> struct AdamParams {
  T beta1, oneMinusBeta1, beta2, oneMinusBeta2, eps, l2;
  double beta1d, beta2d, weightDecay;
  bool decoupled, amsgrad;
};

// rmsprop_update's.
template <typename T> struct RmspropParams {
  T keep, mix, eps, weightDecay, momentum; // keep: alpha; mix: 1 - alpha
};

// nadam_update's.
template <typename T> struct NadamParams {
  T beta1, oneMinusBeta1, beta2, oneMinusBeta2, eps, weightDecay;
  double beta1d, beta2d, momentumDecay;
};

// p, g and the state buffers hold n elements; `step` is the i64 step count, `buf` null without
// momentum (then step may be null too).
template <typename T>
cudaError_t launchSgdUpdate(T *p, const T *g, LrRef lr, const int64_t *step, T *buf, int64_t n,
                            const SgdParams<T> &a, cudaStream_t stream);
// maxV is null without amsgrad.
template <typename T>
cudaError_t launchAdamUpdate(T *p, const T *g, LrRef lr, const int64_t *step, T *m, T *v, T *maxV,
                             int64_t n, const AdamParams<T> &a, cudaStream_t stream);
// buf is null without momentum, gradAvg without centered.
template <typename T>
cudaError_t launchRmspropUpdate(T *p, const T *g, LrRef lr, T *squareAvg, T *buf, T *gradAvg,
                                int64_t n, const RmspropParams<T> &a, cudaStream_t stream);
// muProduct is the scalar state; `work` holds 3 * sizeof(T) bytes of device scratch for the
// step's scalars, which one thread computes (and mu_product's new value) before the update.
template <typename T>
cudaError_t launchNadamUpdate(T *p, const T *g, LrRef lr, const int64_t *step, T *m, T *v,
                              T *muProduct, void *work, int64_t n, const NadamParams<T> &a,
                              cudaStream_t stream);

// The coefficients ops' results, in the order the ops declare them (5 for SGD, 9 for Adam).
template <typename T> struct CoefficientOuts {
  T *out[9];
};

// sgd_coefficients: lr, momentum_now, keep_now, momentum, weight_decay; `keep` = 1 - dampening.
template <typename T>
cudaError_t launchSgdCoefficients(const T *lr, const int64_t *step, double momentum, double keep,
                                  double weightDecay, CoefficientOuts<T> outs, cudaStream_t stream);
// adam_coefficients and adamw_coefficients (decoupled): beta1, 1 - beta1, beta2, 1 - beta2, eps,
// step_size, bias_correction2_sqrt, weight_decay, decay.
template <typename T>
cudaError_t launchAdamCoefficients(const T *lr, const int64_t *step, double beta1, double beta2,
                                   double eps, double weightDecay, bool decoupled,
                                   CoefficientOuts<T> outs, cudaStream_t stream);

} // namespace dtnn::cuda
