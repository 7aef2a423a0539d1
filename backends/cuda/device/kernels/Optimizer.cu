// The optimizer updates and coefficients (see Optimizer.h). Every floating-point operation is
// an intrinsic rounded on its own, so that the compiler contracts none into a fused
// multiply-add: the reference's host code rounds each product and sum.
#include "backends/cuda/device/kernels/Optimizer.h"
#include "backends/cuda/device/kernels/Common.cuh"

#include <algorithm>

namespace dtnn::cuda {

namespace {

// The most blocks of this family's kernels; their grid-stride loops cover the rest.
constexpr int64_t kMostBlocks = 2048;

// The learning rate as the reference reads it (readScalar): a double.
__device__ __forceinline__ double lrValue(LrRef lr) {
  return lr.isDouble ? *static_cast<const double *>(lr.data)
                     : double(*static_cast<const float *>(lr.data));
}

// sgd_update without momentum: p -= lr (g + wd p).
template <typename T> __global__ void sgdPlain(T *p, const T *g, LrRef lr, int64_t n, T wd) {
  __shared__ T lrT;
  if (threadIdx.x == 0) lrT = T(lrValue(lr));
  __syncthreads();
  DTNN_GRID_LOOP(i, n) {
    T pi = p[i];
    p[i] = subRn(pi, mulRn(lrT, addRn(g[i], mulRn(wd, pi))));
  }
}

// sgd_update with momentum; the buffer starts at the gradient on step 1.
template <typename T>
__global__ void sgdMomentum(T *p, const T *g, LrRef lr, const int64_t *step, T *buf, int64_t n,
                            SgdParams<T> a) {
  __shared__ T lrT;
  __shared__ int first;
  if (threadIdx.x == 0) {
    lrT = T(lrValue(lr));
    first = double(*step) <= 1.0;
  }
  __syncthreads();
  DTNN_GRID_LOOP(i, n) {
    T pi = p[i], gi = g[i];
    T d = a.weightDecay != T(0) ? addRn(gi, mulRn(a.weightDecay, pi)) : gi;
    T b = first ? d : addRn(mulRn(a.momentum, buf[i]), mulRn(a.keep, d));
    buf[i] = b;
    d = a.nesterov ? addRn(d, mulRn(a.momentum, b)) : b;
    p[i] = subRn(pi, mulRn(lrT, d));
  }
}

// Adam and AdamW: step size lr / (1 - beta1^t), sqrt(1 - beta2^t) and AdamW's decay
// 1 - lr wd computed in double by one thread of the block, then the elementwise update.
template <typename T>
__global__ void adamUpdate(T *p, const T *g, LrRef lr, const int64_t *step, T *m, T *v, T *maxV,
                           int64_t n, AdamParams<T> a) {
  __shared__ T scalars[3];
  if (threadIdx.x == 0) {
    double lrv = lrValue(lr), t = double(*step);
    scalars[0] = T(__ddiv_rn(lrv, __dsub_rn(1.0, pow(a.beta1d, t))));
    scalars[1] = T(__dsqrt_rn(__dsub_rn(1.0, pow(a.beta2d, t))));
    scalars[2] = a.decoupled ? T(__dsub_rn(1.0, __dmul_rn(lrv, a.weightDecay))) : T(1);
  }
  __syncthreads();
  T stepSize = scalars[0], bc2Sqrt = scalars[1], decay = scalars[2];
  bool decays = decay != T(1);
  DTNN_GRID_LOOP(i, n) {
    T pi = p[i];
    if (decays) pi = mulRn(pi, decay);
    T gi = g[i];
    if (a.l2 != T(0)) gi = addRn(gi, mulRn(a.l2, pi));
    T mi = addRn(mulRn(a.beta1, m[i]), mulRn(a.oneMinusBeta1, gi));
    T vi = addRn(mulRn(a.beta2, v[i]), mulRn(mulRn(a.oneMinusBeta2, gi), gi));
    m[i] = mi;
    v[i] = vi;
    T second = vi;
    if (maxV) {
      T mv = maxV[i];
      mv = mv < vi ? vi : mv; // std::max(max_v, v)
      maxV[i] = mv;
      second = mv;
    }
    p[i] = subRn(pi, mulRn(stepSize, divRn(mi, addRn(divRn(sqrtRn(second), bc2Sqrt), a.eps))));
  }
}

template <typename T>
__global__ void rmspropUpdate(T *p, const T *g, LrRef lr, T *squareAvg, T *buf, T *gradAvg,
                              int64_t n, RmspropParams<T> a) {
  __shared__ T lrT;
  if (threadIdx.x == 0) lrT = T(lrValue(lr));
  __syncthreads();
  DTNN_GRID_LOOP(i, n) {
    T pi = p[i], gi = g[i];
    if (a.weightDecay != T(0)) gi = addRn(gi, mulRn(a.weightDecay, pi));
    T sq = addRn(mulRn(a.keep, squareAvg[i]), mulRn(mulRn(a.mix, gi), gi));
    squareAvg[i] = sq;
    T avg;
    if (gradAvg) {
      T ga = addRn(mulRn(gradAvg[i], a.keep), mulRn(a.mix, gi));
      gradAvg[i] = ga;
      avg = addRn(sqrtRn(subRn(sq, mulRn(ga, ga))), a.eps);
    } else {
      avg = addRn(sqrtRn(sq), a.eps);
    }
    if (buf) {
      T b = addRn(mulRn(a.momentum, buf[i]), divRn(gi, avg));
      buf[i] = b;
      p[i] = subRn(pi, mulRn(lrT, b));
    } else {
      p[i] = subRn(pi, mulRn(lrT, divRn(gi, avg)));
    }
  }
}

// NAdam's step scalars, by one thread: mu_t, mu_{t+1}, mu_product's new value (written), the
// gradient's and the momentum's step factors and 1 - beta2^t, into `work`.
template <typename T>
__global__ void nadamScalars(LrRef lr, const int64_t *step, T *muProduct, T *work, NadamParams<T> a) {
  double lrv = lrValue(lr), t = double(*step);
  double mu = __dmul_rn(a.beta1d, __dsub_rn(1.0, __dmul_rn(0.5, pow(0.96, __dmul_rn(t, a.momentumDecay)))));
  double muNext = __dmul_rn(
      a.beta1d,
      __dsub_rn(1.0, __dmul_rn(0.5, pow(0.96, __dmul_rn(__dadd_rn(t, 1.0), a.momentumDecay)))));
  T product = T(__dmul_rn(double(*muProduct), mu));
  *muProduct = product;
  double prod = double(product);
  work[0] = T(__ddiv_rn(__dmul_rn(-lrv, __dsub_rn(1.0, mu)), __dsub_rn(1.0, prod)));
  work[1] = T(__ddiv_rn(__dmul_rn(-lrv, muNext), __dsub_rn(1.0, __dmul_rn(prod, muNext))));
  work[2] = T(__dsub_rn(1.0, pow(a.beta2d, t)));
}

template <typename T>
__global__ void nadamUpdate(T *p, const T *g, T *m, T *v, const T *work, int64_t n,
                            NadamParams<T> a) {
  T gradStep = work[0], momentumStep = work[1], bc2 = work[2];
  DTNN_GRID_LOOP(i, n) {
    T pi = p[i], gi = g[i];
    if (a.weightDecay != T(0)) gi = addRn(gi, mulRn(a.weightDecay, pi));
    T mi = addRn(mulRn(a.beta1, m[i]), mulRn(a.oneMinusBeta1, gi));
    T vi = addRn(mulRn(a.beta2, v[i]), mulRn(mulRn(a.oneMinusBeta2, gi), gi));
    m[i] = mi;
    v[i] = vi;
    T denom = addRn(sqrtRn(divRn(vi, bc2)), a.eps);
    pi = addRn(pi, mulRn(gradStep, divRn(gi, denom)));
    p[i] = addRn(pi, mulRn(momentumStep, divRn(mi, denom)));
  }
}

template <typename T>
__global__ void sgdCoefficients(const T *lr, const int64_t *step, double momentum, double keep,
                                double weightDecay, CoefficientOuts<T> outs) {
  double lrv = double(*lr);
  bool first = double(*step) <= 1.0;
  double values[5] = {lrv, first ? 0.0 : momentum, first ? 1.0 : keep, momentum, weightDecay};
  for (int i = 0; i < 5; ++i) *outs.out[i] = T(values[i]);
}

template <typename T>
__global__ void adamCoefficients(const T *lr, const int64_t *step, double beta1, double beta2,
                                 double eps, double weightDecay, bool decoupled,
                                 CoefficientOuts<T> outs) {
  double lrv = double(*lr), t = double(*step);
  double values[9] = {beta1,
                      __dsub_rn(1.0, beta1),
                      beta2,
                      __dsub_rn(1.0, beta2),
                      eps,
                      __ddiv_rn(lrv, __dsub_rn(1.0, pow(beta1, t))),
                      __dsqrt_rn(__dsub_rn(1.0, pow(beta2, t))),
                      decoupled ? 0.0 : weightDecay,
                      decoupled ? __dsub_rn(1.0, __dmul_rn(lrv, weightDecay)) : 1.0};
  for (int i = 0; i < 9; ++i) *outs.out[i] = T(values[i]);
}

} // namespace

template <typename T>
cudaError_t launchSgdUpdate(T *p, const T *g, LrRef lr, const int64_t *step, T *buf, int64_t n,
                            const SgdParams<T> &a, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  if (a.momentum == T(0))
    sgdPlain<T><<<blocksFor(n, kThreads, kMostBlocks), kThreads, 0, stream>>>(p, g, lr, n, a.weightDecay);
  else
    sgdMomentum<T><<<blocksFor(n, kThreads, kMostBlocks), kThreads, 0, stream>>>(p, g, lr, step, buf, n, a);
  return cudaGetLastError();
}

template <typename T>
cudaError_t launchAdamUpdate(T *p, const T *g, LrRef lr, const int64_t *step, T *m, T *v, T *maxV,
                             int64_t n, const AdamParams<T> &a, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  adamUpdate<T><<<blocksFor(n, kThreads, kMostBlocks), kThreads, 0, stream>>>(p, g, lr, step, m, v, maxV, n, a);
  return cudaGetLastError();
}

template <typename T>
cudaError_t launchRmspropUpdate(T *p, const T *g, LrRef lr, T *squareAvg, T *buf, T *gradAvg,
                                int64_t n, const RmspropParams<T> &a, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  rmspropUpdate<T><<<blocksFor(n, kThreads, kMostBlocks), kThreads, 0, stream>>>(p, g, lr, squareAvg, buf, gradAvg, n, a);
  return cudaGetLastError();
}

template <typename T>
cudaError_t launchNadamUpdate(T *p, const T *g, LrRef lr, const int64_t *step, T *m, T *v,
                              T *muProduct, void *work, int64_t n, const NadamParams<T> &a,
                              cudaStream_t stream) {
  T *scalars = static_cast<T *>(work);
  // mu_product advances every step, whatever the parameter's size.
  nadamScalars<T><<<1, 1, 0, stream>>>(lr, step, muProduct, scalars, a);
  if (n > 0) nadamUpdate<T><<<blocksFor(n, kThreads, kMostBlocks), kThreads, 0, stream>>>(p, g, m, v, scalars, n, a);
  return cudaGetLastError();
}

template <typename T>
cudaError_t launchSgdCoefficients(const T *lr, const int64_t *step, double momentum, double keep,
                                  double weightDecay, CoefficientOuts<T> outs, cudaStream_t stream) {
  sgdCoefficients<T><<<1, 1, 0, stream>>>(lr, step, momentum, keep, weightDecay, outs);
  return cudaGetLastError();
}

template <typename T>
cudaError_t launchAdamCoefficients(const T *lr, const int64_t *step, double beta1, double beta2,
                                   double eps, double weightDecay, bool decoupled,
                                   CoefficientOuts<T> outs, cudaStream_t stream) {
  adamCoefficients<T><<<1, 1, 0, stream>>>(lr, step, beta1, beta2, eps, weightDecay, decoupled, outs);
  return cudaGetLastError();
}

#define DTNN_OPTIMIZER_INSTANCES(T)                                                                \
  template cudaError_t launchSgdUpdate<T>(T *, const T *, LrRef, const int64_t *, T *, int64_t,     \
                                          const SgdParams<T> &, cudaStream_t);                     \
  template cudaError_t launchAdamUpdate<T>(T *, const T *, LrRef, const int64_t *, T *, T *, T *,  \
                                           int64_t, const AdamParams<T> &, cudaStream_t);          \
  template cudaError_t launchRmspropUpdate<T>(T *, const T *, LrRef, T *, T *, T *, int64_t,       \
                                              const RmspropParams<T> &, cudaStream_t);             \
  template cudaError_t launchNadamUpdate<T>(T *, const T *, LrRef, const int64_t *, T *, T *, T *, \
                                            void *, int64_t, const NadamParams<T> &, cudaStream_t); \
  template cudaError_t launchSgdCoefficients<T>(const T *, const int64_t *, double, double, double, \
                                                CoefficientOuts<T>, cudaStream_t);                 \
  template cudaError_t launchAdamCoefficients<T>(const T *, const int64_t *, double, double,       \
                                                 double, double, bool, CoefficientOuts<T>,         \
                                                 cudaStream_t);
DTNN_OPTIMIZER_INSTANCES(float)
DTNN_OPTIMIZER_INSTANCES(double)

} // namespace dtnn::cuda
