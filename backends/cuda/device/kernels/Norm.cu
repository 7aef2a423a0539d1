// The batch normalization ops (see Norm.h). The per-channel sums run in
// two kernels: channelPartials, one block per segment of a channel, each
// thread adding its elements (a stride of the block apart) in order and
// the block's threads combined by a fixed tree; then finishChannels, one
// thread per channel adding its segments in order and computing the
// channel's statistics. The elementwise kernels stride over the tensor.
#include "backends/cuda/device/kernels/Norm.h"
#include "backends/cuda/device/kernels/Common.cuh"

#include <algorithm>
#include <climits>

namespace dtnn::cuda {

namespace {

// The elements of a channel per segment of its sums.
constexpr int64_t kPerSegment = 4096;

// The segments of a channel of `count` elements: a function of the count alone.
int64_t segmentsFor(int64_t count) {
  return std::max<int64_t>(1, std::min(kMaxNormSegments, (count + kPerSegment - 1) / kPerSegment));
}

__device__ __forceinline__ float expOf(float a) { return expf(a); }
__device__ __forceinline__ double expOf(double a) { return exp(a); }
__device__ __forceinline__ float tanhOf(float a) { return tanhf(a); }
__device__ __forceinline__ double tanhOf(double a) { return tanh(a); }

// The fused activation, as backends/reference/FusedActivation.h evaluates it (relu6 as
// std::min(std::max(v, 0), 6), which keeps a NaN).
template <typename T> __device__ T activate(T v, NormAct act) {
  switch (act) {
  case NormAct::None: return v;
  case NormAct::Relu: return v > T(0) ? v : T(0);
  case NormAct::Relu6: {
    T r = v < T(0) ? T(0) : v;
    return T(6) < r ? T(6) : r;
  }
  case NormAct::Sigmoid: return divRn(T(1), addRn(T(1), expOf(-v)));
  case NormAct::Tanh: return tanhOf(v);
  }
  return v;
}

// Two sums in double.
struct Sums {
  double a, b;
};

// The channel of element i of [N,C,S].
__device__ __forceinline__ int64_t channelOf(int64_t i, const NormShape &s) { return (i / s.s) % s.c; }

// partial[ch * segments + seg] = the sums of term(i, ch) over segment seg of channel ch's
// elements i (its count elements cut into `segments` equal runs, in image-then-plane order);
// one block per segment, blockIdx.x = ch * segments + seg.
template <typename Term>
__global__ void channelPartials(Term term, NormShape s, int64_t segments, Sums *partial) {
  __shared__ Sums tree[kThreads];
  const int64_t ch = blockIdx.x / segments, seg = blockIdx.x - ch * segments;
  const int64_t count = s.count(), per = (count + segments - 1) / segments;
  const int64_t end = (seg + 1) * per < count ? (seg + 1) * per : count;
  Sums acc = {0, 0};
  for (int64_t j = seg * per + threadIdx.x; j < end; j += kThreads) {
    const int64_t image = j / s.s;
    Sums t = term((image * s.c + ch) * s.s + (j - image * s.s), ch);
    acc.a = __dadd_rn(acc.a, t.a);
    acc.b = __dadd_rn(acc.b, t.b);
  }
  tree[threadIdx.x] = acc;
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half >>= 1) {
    if (int(threadIdx.x) < half) {
      tree[threadIdx.x].a = __dadd_rn(tree[threadIdx.x].a, tree[threadIdx.x + half].a);
      tree[threadIdx.x].b = __dadd_rn(tree[threadIdx.x].b, tree[threadIdx.x + half].b);
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) partial[blockIdx.x] = tree[0];
}

// finish(ch, sums of channel ch) for every channel, its segments' partial sums added in order.
template <typename Finish>
__global__ void finishChannels(Finish finish, const Sums *partial, int64_t channels, int64_t segments) {
  DTNN_GRID_LOOP(ch, channels) {
    Sums t = {0, 0};
    for (int64_t seg = 0; seg < segments; ++seg) {
      t.a = __dadd_rn(t.a, partial[ch * segments + seg].a);
      t.b = __dadd_rn(t.b, partial[ch * segments + seg].b);
    }
    finish(ch, t);
  }
}

// The sums of term over each channel, handed to finish; `work` holds the partial sums.
template <typename Term, typename Finish>
cudaError_t reduceChannels(Term term, Finish finish, NormShape s, void *work, cudaStream_t stream) {
  const int64_t segments = segmentsFor(s.count());
  if (s.c * segments > INT_MAX) return cudaErrorInvalidValue; // not claimed (ops/NormOps.cpp)
  Sums *partial = static_cast<Sums *>(work);
  channelPartials<<<unsigned(s.c * segments), kThreads, 0, stream>>>(term, s, segments, partial);
  if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  finishChannels<<<blocksFor(s.c), kThreads, 0, stream>>>(finish, partial, s.c, segments);
  return cudaGetLastError();
}

// The per-channel slots behind the partial sums in the workspace.
Sums *channelSlots(void *work, int64_t channels) {
  return static_cast<Sums *>(work) + channels * kMaxNormSegments;
}

// ---------------------------------------------------------------------------
// batchnorm

template <typename T>
__global__ void batchNormKernel(const T *x, NormParams<T> p, T *y, NormShape s, int64_t total, T eps,
                                NormAct act) {
  DTNN_GRID_LOOP(i, total) {
    const int64_t ch = channelOf(i, s);
    const T scale = divRn(p.gamma[ch], sqrtRn(addRn(p.var[ch], eps)));
    const T shift = subRn(p.beta[ch], mulRn(p.mean[ch], scale));
    y[i] = activate(addRn(mulRn(x[i], scale), shift), act);
  }
}

// ---------------------------------------------------------------------------
// batchnorm_train

// The terms of the first pass: x.
template <typename T> struct SumOfX {
  const T *x;
  __device__ Sums operator()(int64_t i, int64_t) const { return {double(x[i]), 0}; }
};

// The batch mean of each channel into its slot's a.
struct MeanOf {
  Sums *slots;
  double count;
  __device__ void operator()(int64_t ch, Sums t) const { slots[ch] = {count ? __ddiv_rn(t.a, count) : 0, 0}; }
};

// The terms of the second pass: (x - mean)^2, in double.
template <typename T> struct SquaredDeviation {
  const T *x;
  const Sums *slots;
  __device__ Sums operator()(int64_t i, int64_t ch) const {
    const double d = __dsub_rn(double(x[i]), slots[ch].a);
    return {__dmul_rn(d, d), 0};
  }
};

// The mean and invstd results and the running statistics' update, from the mean and the sum
// of squared deviations.
template <typename T> struct TrainStatistics {
  NormTrainArgs<T> a;
  const Sums *slots;
  double count, eps, momentum;
  __device__ void operator()(int64_t ch, Sums t) const {
    const double mean = slots[ch].a, sq = t.a;
    const double var = count ? __ddiv_rn(sq, count) : 0;
    const double unbiased = count > 1 ? __ddiv_rn(sq, __dsub_rn(count, 1)) : var;
    a.mean[ch] = T(mean);
    a.invstd[ch] = T(__ddiv_rn(1, __dsqrt_rn(__dadd_rn(var, eps))));
    const double keep = __dsub_rn(1, momentum);
    a.runMean[ch] = T(__dadd_rn(__dmul_rn(keep, double(a.runMean[ch])), __dmul_rn(momentum, mean)));
    a.runVar[ch] = T(__dadd_rn(__dmul_rn(keep, double(a.runVar[ch])), __dmul_rn(momentum, unbiased)));
  }
};

// y = (x - mean) * (gamma * invstd) + beta, then act.
template <typename T>
__global__ void normalizeKernel(NormTrainArgs<T> a, NormShape s, int64_t total, NormAct act) {
  DTNN_GRID_LOOP(i, total) {
    const int64_t ch = channelOf(i, s);
    const T scale = mulRn(a.gamma[ch], a.invstd[ch]);
    a.y[i] = activate(addRn(mulRn(subRn(a.x[i], a.mean[ch]), scale), a.beta[ch]), act);
  }
}

// ---------------------------------------------------------------------------
// batchnorm_backward and batchnorm_backward_frozen

// The terms of the gradients' sums: dy and dy * ((x - mean) * invstd), the latter in T.
template <typename T> struct GradientTerms {
  const T *dy, *x, *mean, *invstd;
  __device__ Sums operator()(int64_t i, int64_t ch) const {
    const T xh = mulRn(subRn(x[i], mean[ch]), invstd[ch]);
    return {double(dy[i]), double(mulRn(dy[i], xh))};
  }
};

// dbeta and dgamma, and into the channel's slot T(dbeta / count) and T(dgamma / count).
template <typename T> struct GradientStatistics {
  NormGrads<T> g;
  Sums *slots;
  double count;
  __device__ void operator()(int64_t ch, Sums t) const {
    g.dbeta[ch] = T(t.a);
    g.dgamma[ch] = T(t.b);
    if (count) slots[ch] = {double(T(__ddiv_rn(t.a, count))), double(T(__ddiv_rn(t.b, count)))};
  }
};

// dx = gamma * invstd * (dy - meanDy - (x - mean) * invstd * meanDyX).
template <typename T>
__global__ void gradientKernel(const T *dy, const T *x, const T *gamma, const T *mean, const T *invstd,
                               const Sums *slots, T *dx, NormShape s, int64_t total) {
  DTNN_GRID_LOOP(i, total) {
    const int64_t ch = channelOf(i, s);
    const T m = mean[ch], inv = invstd[ch], scale = mulRn(gamma[ch], inv);
    const T meanDy = T(slots[ch].a), meanDyX = T(slots[ch].b);
    dx[i] = mulRn(scale, subRn(subRn(dy[i], meanDy), mulRn(mulRn(subRn(x[i], m), inv), meanDyX)));
  }
}

// The frozen gradient's terms, as GradientTerms with invstd = 1 / sqrt(var + eps), writing
// dx = dy * (gamma * invstd) on the way (after reading the element's dy and x).
template <typename T> struct FrozenTerms {
  const T *dy, *x, *gamma, *mean, *var;
  T eps;
  T *dx;
  __device__ Sums operator()(int64_t i, int64_t ch) const {
    const T inv = divRn(T(1), sqrtRn(addRn(var[ch], eps)));
    const T d = dy[i], xh = mulRn(subRn(x[i], mean[ch]), inv);
    dx[i] = mulRn(d, mulRn(gamma[ch], inv));
    return {double(d), double(mulRn(d, xh))};
  }
};

// dbeta and dgamma.
template <typename T> struct FrozenStatistics {
  NormGrads<T> g;
  __device__ void operator()(int64_t ch, Sums t) const {
    g.dbeta[ch] = T(t.a);
    g.dgamma[ch] = T(t.b);
  }
};

// ---------------------------------------------------------------------------
// batchnorm_fold and moving_average

template <typename T> __device__ T foldScale(const NormParams<T> &p, int64_t ch, T eps) {
  return divRn(p.gamma[ch], sqrtRn(addRn(p.var[ch], eps)));
}

template <typename T>
__global__ void foldKernel(const T *w, NormParams<T> p, const T *bias, T *wf, T *bf, int64_t k,
                           int64_t per, T eps) {
  DTNN_GRID_LOOP(i, k * per) wf[i] = mulRn(w[i], foldScale(p, i / per, eps));
  DTNN_GRID_LOOP(ch, k) {
    const T b = bias ? bias[ch] : T(0);
    bf[ch] = addRn(mulRn(subRn(b, p.mean[ch]), foldScale(p, ch, eps)), p.beta[ch]);
  }
}

template <typename T>
__global__ void movingAverageKernel(T *buf, const T *value, int64_t n, double momentum, double keep) {
  DTNN_GRID_LOOP(i, n) {
    buf[i] = T(__dadd_rn(__dmul_rn(keep, double(buf[i])), __dmul_rn(momentum, double(value[i]))));
  }
}

} // namespace

template <typename T>
cudaError_t launchBatchNorm(const T *x, NormParams<T> p, T *y, NormShape s, T eps, NormAct act,
                            cudaStream_t stream) {
  const int64_t total = s.count() * s.c;
  if (total == 0) return cudaSuccess;
  batchNormKernel<T><<<blocksFor(total), kThreads, 0, stream>>>(x, p, y, s, total, eps, act);
  return cudaGetLastError();
}

template <typename T>
cudaError_t launchBatchNormTrain(const NormTrainArgs<T> &a, NormShape s, double eps, double momentum,
                                 NormAct act, void *work, cudaStream_t stream) {
  if (s.c == 0) return cudaSuccess;
  Sums *slots = channelSlots(work, s.c);
  const double count = double(s.count());
  if (cudaError_t e = reduceChannels(SumOfX<T>{a.x}, MeanOf{slots, count}, s, work, stream); e != cudaSuccess)
    return e;
  if (cudaError_t e = reduceChannels(SquaredDeviation<T>{a.x, slots},
                                     TrainStatistics<T>{a, slots, count, eps, momentum}, s, work, stream);
      e != cudaSuccess)
    return e;
  const int64_t total = s.count() * s.c;
  if (total == 0) return cudaSuccess;
  normalizeKernel<T><<<blocksFor(total), kThreads, 0, stream>>>(a, s, total, act);
  return cudaGetLastError();
}

template <typename T>
cudaError_t launchBatchNormBackward(const T *dy, const T *x, const T *gamma, const T *mean,
                                    const T *invstd, NormGrads<T> g, NormShape s, void *work,
                                    cudaStream_t stream) {
  if (s.c == 0) return cudaSuccess;
  Sums *slots = channelSlots(work, s.c);
  if (cudaError_t e = reduceChannels(GradientTerms<T>{dy, x, mean, invstd},
                                     GradientStatistics<T>{g, slots, double(s.count())}, s, work, stream);
      e != cudaSuccess)
    return e;
  const int64_t total = s.count() * s.c;
  if (total == 0) return cudaSuccess;
  gradientKernel<T><<<blocksFor(total), kThreads, 0, stream>>>(dy, x, gamma, mean, invstd, slots, g.dx, s,
                                                                total);
  return cudaGetLastError();
}

template <typename T>
cudaError_t launchBatchNormBackwardFrozen(const T *dy, const T *x, const T *gamma, const T *mean,
                                          const T *var, T eps, NormGrads<T> g, NormShape s,
                                          void *work, cudaStream_t stream) {
  if (s.c == 0) return cudaSuccess;
  return reduceChannels(FrozenTerms<T>{dy, x, gamma, mean, var, eps, g.dx}, FrozenStatistics<T>{g}, s,
                        work, stream);
}

template <typename T>
cudaError_t launchBatchNormFold(const T *w, NormParams<T> p, const T *bias, T *wf, T *bf,
                                int64_t k, int64_t per, T eps, cudaStream_t stream) {
  if (k == 0) return cudaSuccess;
  foldKernel<T><<<blocksFor(k * std::max<int64_t>(per, 1)), kThreads, 0, stream>>>(w, p, bias, wf, bf,
                                                                                    k, per, eps);
  return cudaGetLastError();
}

template <typename T>
cudaError_t launchMovingAverage(T *buf, const T *value, int64_t n, double momentum, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  movingAverageKernel<T><<<blocksFor(n), kThreads, 0, stream>>>(buf, value, n, momentum, 1 - momentum);
  return cudaGetLastError();
}

#define DTNN_NORM_INSTANCES(T)                                                                     \
  template cudaError_t launchBatchNorm<T>(const T *, NormParams<T>, T *, NormShape, T, NormAct,     \
                                          cudaStream_t);                                           \
  template cudaError_t launchBatchNormTrain<T>(const NormTrainArgs<T> &, NormShape, double, double, \
                                               NormAct, void *, cudaStream_t);                     \
  template cudaError_t launchBatchNormBackward<T>(const T *, const T *, const T *, const T *,       \
                                                  const T *, NormGrads<T>, NormShape, void *,      \
                                                  cudaStream_t);                                   \
  template cudaError_t launchBatchNormBackwardFrozen<T>(const T *, const T *, const T *, const T *, \
                                                        const T *, T, NormGrads<T>, NormShape,     \
                                                        void *, cudaStream_t);                     \
  template cudaError_t launchBatchNormFold<T>(const T *, NormParams<T>, const T *, T *, T *,        \
                                              int64_t, int64_t, T, cudaStream_t);                  \
  template cudaError_t launchMovingAverage<T>(T *, const T *, int64_t, double, cudaStream_t);
DTNN_NORM_INSTANCES(float)
DTNN_NORM_INSTANCES(double)

} // namespace dtnn::cuda
