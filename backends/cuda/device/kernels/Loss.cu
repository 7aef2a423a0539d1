// The losses and accuracy (see Loss.h). Sums within a warp go through a
// butterfly of shuffles, within a block through the warps' results added in
// warp order; products are rounded on their own where nvcc would otherwise
// fuse them into the following addition, as the reference's compiler does not.
#include "backends/cuda/device/kernels/Loss.h"
#include "backends/cuda/device/kernels/Common.cuh"

#include <algorithm>
#include <limits>

namespace dtnn::cuda {

namespace {

// The most blocks of this family's kernels; their grid-stride loops cover the rest.
constexpr int64_t kMostBlocks = 8192;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// std::max as the reference calls it: b when a < b, else a (so a NaN b is passed over).
__device__ inline double maxOf(double a, double b) { return a < b ? b : a; }
__device__ inline double mulOf(double a, double b) { return __dmul_rn(a, b); }

__device__ inline bool validLabel(int32_t label, int64_t classes) { return label >= 0 && label < classes; }

// The warps of the grid, each taking rows (or segments) first, first + step, ..
__device__ inline int64_t warpFirst() { return (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) >> 5; }
__device__ inline int64_t warpStep() { return (int64_t(gridDim.x) * blockDim.x) >> 5; }
__device__ inline int laneOf() { return int(threadIdx.x & 31); }

template <typename A> __device__ inline A warpSum(A v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ inline double warpMax(double v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = maxOf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// The sum of v over the block, the warps' sums added in warp order; in every thread.
template <typename A> __device__ inline A blockSum(A v) {
  __shared__ A part[32];
  v = warpSum(v);
  __syncthreads();
  if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = v;
  __syncthreads();
  A r = part[0];
  for (unsigned w = 1; w < (blockDim.x >> 5); ++w) r += part[w];
  return r;
}

// The number of labels that are not `ignore`, at least 1 (the divisor of a mean); one block.
__device__ inline double countedRows(const int32_t *label, int64_t rows, int64_t ignore) {
  long long c = 0;
  for (int64_t i = threadIdx.x; i < rows; i += blockDim.x) c += label[i] != ignore ? 1 : 0;
  c = blockSum(c);
  return double(c > 1 ? c : 1);
}

// The row's maximum m (NaNs passed over) and lse = log(sum(exp(x - m))), in every lane of the warp.
template <typename T>
__device__ inline void logSumExp(const T *row, int64_t classes, double &m, double &lse) {
  const int lane = laneOf();
  double mx = -INFINITY;
  for (int64_t j = lane; j < classes; j += 32) mx = maxOf(mx, double(row[j]));
  mx = warpMax(mx);
  double s = 0;
  for (int64_t j = lane; j < classes; j += 32) s += exp(double(row[j]) - mx);
  m = mx;
  lse = log(warpSum(s));
}

// Values summed by meanOf: ones kept in the workspace, or nll_loss's of each row.
struct Stored {
  const double *v;
  __device__ double operator()(int64_t i) const { return v[i]; }
};

template <typename T> struct NllRow {
  const T *x;
  const int32_t *label;
  ClassifierShape s;
  __device__ double operator()(int64_t i) const {
    int32_t l = label[i];
    if (l == s.ignore) return 0.0;
    return validLabel(l, s.classes) ? -double(x[i * s.classes + l]) : kNaN;
  }
};

// out = T(sum of value(i) for i < n / divisor), the divisor the counted rows of `label` or, without
// labels, `elements`; one block.
template <typename T, typename V>
__global__ void meanOf(V value, int64_t n, const int32_t *label, ClassifierShape s, double elements, T *out) {
  double sum = 0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) sum += value(i);
  sum = blockSum(sum);
  double divisor = label ? countedRows(label, s.rows, s.ignore) : elements;
  if (threadIdx.x == 0) *out = T(sum / divisor);
}

// counted[0] = the counted rows; one block.
__global__ void countRows(const int32_t *label, ClassifierShape s, double *counted) {
  double c = countedRows(label, s.rows, s.ignore);
  if (threadIdx.x == 0) *counted = c;
}

// Each row's softmax cross-entropy: 0 when ignored, NaN for an invalid label.
template <typename T>
__global__ void crossEntropyRows(const T *x, const int32_t *label, double *rowLoss, ClassifierShape s) {
  for (int64_t i = warpFirst(); i < s.rows; i += warpStep()) {
    const int32_t l = label[i];
    if (l == s.ignore || !validLabel(l, s.classes)) {
      if (laneOf() == 0) rowLoss[i] = l == s.ignore ? 0.0 : kNaN;
      continue;
    }
    const T *row = x + i * s.classes;
    double m, lse;
    logSumExp(row, s.classes, m, lse);
    // x - m is exact for the large logits where m + lse would round.
    if (laneOf() == 0) rowLoss[i] = lse - (double(row[l]) - m);
  }
}

template <typename T>
__global__ void crossEntropyBackwardRows(const T *dy, const T *x, const int32_t *label, T *dx,
                                         const double *counted, ClassifierShape s) {
  const double scale = double(*dy) / *counted;
  for (int64_t i = warpFirst(); i < s.rows; i += warpStep()) {
    const int32_t l = label[i];
    const T *row = x + i * s.classes;
    T *out = dx + i * s.classes;
    if (l == s.ignore || !validLabel(l, s.classes)) {
      const T v = T(l == s.ignore ? 0.0 : kNaN);
      for (int64_t j = laneOf(); j < s.classes; j += 32) out[j] = v;
      continue;
    }
    double m, lse;
    logSumExp(row, s.classes, m, lse);
    for (int64_t j = laneOf(); j < s.classes; j += 32) {
      double p = exp(double(row[j]) - m - lse);
      out[j] = T((p - (j == l ? 1.0 : 0.0)) * scale);
    }
  }
}

template <typename T>
__global__ void nllBackward(const T *dy, const int32_t *label, T *dx, const double *counted,
                            ClassifierShape s) {
  const T g = T(-double(*dy) / *counted);
  const int64_t n = s.rows * s.classes;
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < n;
       e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t i = e / s.classes, j = e - i * s.classes;
    const int32_t l = label[i];
    const bool skip = l == s.ignore, valid = !skip && validLabel(l, s.classes);
    dx[e] = valid ? (j == l ? g : T(0)) : skip ? T(0) : T(kNaN);
  }
}

// Each row's hit (1) or miss (0) of accuracy.
template <typename T>
__global__ void accuracyRows(const T *x, const int32_t *label, double *rowHit, ClassifierShape s, int64_t k) {
  for (int64_t i = warpFirst(); i < s.rows; i += warpStep()) {
    const int32_t l = label[i];
    const T *row = x + i * s.classes;
    if (l == s.ignore || !validLabel(l, s.classes) || row[l] != row[l]) {
      if (laneOf() == 0) rowHit[i] = 0.0;
      continue;
    }
    const T own = row[l];
    long long before = 0;
    for (int64_t j = laneOf(); j < s.classes; j += 32) {
      const T v = row[j];
      before += v > own || (v == own && j < l) || v != v ? 1 : 0;
    }
    before = warpSum(before);
    if (laneOf() == 0) rowHit[i] = before < k ? 1.0 : 0.0;
  }
}

// The elementwise losses' terms, in double.
template <typename T> struct MseTerm {
  const T *p, *t;
  __device__ double operator()(int64_t i) const {
    double d = double(p[i]) - double(t[i]);
    return mulOf(d, d);
  }
};

template <typename T> struct BceTerm {
  const T *p, *t;
  __device__ double operator()(int64_t i) const {
    double pi = p[i], ti = t[i];
    double logP = maxOf(log(pi), -100.0);
    double log1mP = maxOf(log1p(-pi), -100.0);
    return mulOf(ti - 1, log1mP) - mulOf(ti, logP);
  }
};

// partial[segment] = the sum of term over the segment's elements; a warp per segment.
template <typename Term>
__global__ void termSegments(Term term, int64_t n, ReduceSplit split, double *partial) {
  for (int64_t seg = warpFirst(); seg < split.segments; seg += warpStep()) {
    const int64_t end = std::min(n, (seg + 1) * split.length);
    double a = 0;
    for (int64_t i = seg * split.length + laneOf(); i < end; i += 32) a += term(i);
    a = warpSum(a);
    if (laneOf() == 0) partial[seg] = a;
  }
}

template <typename T> __global__ void mseBackward(const T *dy, const T *p, const T *t, T *dx, int64_t n) {
  const T scale = T(2 * double(*dy) / double(n));
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    dx[i] = scale * (p[i] - t[i]);
}

template <typename T> __global__ void bceBackward(const T *dy, const T *p, const T *t, T *dx, int64_t n) {
  const double scale = double(*dy) / double(n);
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    double pi = p[i];
    dx[i] = T(scale * (pi - double(t[i])) / maxOf((1 - pi) * pi, 1e-12));
  }
}

// The blocks of warps taking `rows` rows.
unsigned rowBlocks(int64_t rows) { return blocksFor(rows * 32, kThreads, kMostBlocks); }

// The mean of the elementwise loss `term` over n elements.
template <typename T, typename Term>
cudaError_t meanOfTerms(Term term, T *loss, double *partial, int64_t n, cudaStream_t stream) {
  ReduceSplit split = elementSplit(n);
  termSegments<<<rowBlocks(split.segments), kThreads, 0, stream>>>(term, n, split, partial);
  if (cudaError_t e = cudaGetLastError()) return e;
  meanOf<T><<<1, kThreads, 0, stream>>>(Stored{partial}, split.segments, nullptr, ClassifierShape{},
                                        double(n), loss);
  return cudaGetLastError();
}

} // namespace

template <typename T>
cudaError_t launchSoftmaxCrossEntropy(const T *x, const int32_t *label, T *loss, double *rowLoss,
                                      const ClassifierShape &s, cudaStream_t stream) {
  crossEntropyRows<T><<<rowBlocks(s.rows), kThreads, 0, stream>>>(x, label, rowLoss, s);
  if (cudaError_t e = cudaGetLastError()) return e;
  meanOf<T><<<1, kThreads, 0, stream>>>(Stored{rowLoss}, s.rows, label, s, 0.0, loss);
  return cudaGetLastError();
}

template <typename T>
cudaError_t launchSoftmaxCrossEntropyBackward(const T *dy, const T *x, const int32_t *label, T *dx,
                                              double *counted, const ClassifierShape &s,
                                              cudaStream_t stream) {
  countRows<<<1, kThreads, 0, stream>>>(label, s, counted);
  if (cudaError_t e = cudaGetLastError()) return e;
  crossEntropyBackwardRows<T><<<rowBlocks(s.rows), kThreads, 0, stream>>>(dy, x, label, dx, counted, s);
  return cudaGetLastError();
}

template <typename T>
cudaError_t launchNllLoss(const T *x, const int32_t *label, T *loss, const ClassifierShape &s,
                          cudaStream_t stream) {
  meanOf<T><<<1, kThreads, 0, stream>>>(NllRow<T>{x, label, s}, s.rows, label, s, 0.0, loss);
  return cudaGetLastError();
}

template <typename T>
cudaError_t launchNllLossBackward(const T *dy, const int32_t *label, T *dx, double *counted,
                                  const ClassifierShape &s, cudaStream_t stream) {
  countRows<<<1, kThreads, 0, stream>>>(label, s, counted);
  if (cudaError_t e = cudaGetLastError()) return e;
  nllBackward<T><<<blocksFor(s.rows * s.classes, kThreads, kMostBlocks), kThreads, 0, stream>>>(dy, label, dx, counted, s);
  return cudaGetLastError();
}

template <typename T>
cudaError_t launchAccuracy(const T *x, const int32_t *label, T *accuracy, double *rowHit,
                           const ClassifierShape &s, int64_t k, cudaStream_t stream) {
  accuracyRows<T><<<rowBlocks(s.rows), kThreads, 0, stream>>>(x, label, rowHit, s, k);
  if (cudaError_t e = cudaGetLastError()) return e;
  meanOf<T><<<1, kThreads, 0, stream>>>(Stored{rowHit}, s.rows, label, s, 0.0, accuracy);
  return cudaGetLastError();
}

template <typename T>
cudaError_t launchMseLoss(const T *p, const T *t, T *loss, double *partial, int64_t n, cudaStream_t stream) {
  return meanOfTerms(MseTerm<T>{p, t}, loss, partial, n, stream);
}

template <typename T>
cudaError_t launchMseLossBackward(const T *dy, const T *p, const T *t, T *dx, int64_t n,
                                  cudaStream_t stream) {
  mseBackward<T><<<blocksFor(n, kThreads, kMostBlocks), kThreads, 0, stream>>>(dy, p, t, dx, n);
  return cudaGetLastError();
}

template <typename T>
cudaError_t launchBceLoss(const T *p, const T *t, T *loss, double *partial, int64_t n, cudaStream_t stream) {
  return meanOfTerms(BceTerm<T>{p, t}, loss, partial, n, stream);
}

template <typename T>
cudaError_t launchBceLossBackward(const T *dy, const T *p, const T *t, T *dx, int64_t n,
                                  cudaStream_t stream) {
  bceBackward<T><<<blocksFor(n, kThreads, kMostBlocks), kThreads, 0, stream>>>(dy, p, t, dx, n);
  return cudaGetLastError();
}

#define DTNN_LOSS_INSTANCES(T)                                                                               \
  template cudaError_t launchSoftmaxCrossEntropy<T>(const T *, const int32_t *, T *, double *,               \
                                                    const ClassifierShape &, cudaStream_t);                  \
  template cudaError_t launchSoftmaxCrossEntropyBackward<T>(                                                 \
      const T *, const T *, const int32_t *, T *, double *, const ClassifierShape &, cudaStream_t);          \
  template cudaError_t launchNllLoss<T>(const T *, const int32_t *, T *, const ClassifierShape &,            \
                                        cudaStream_t);                                                       \
  template cudaError_t launchNllLossBackward<T>(const T *, const int32_t *, T *, double *,                   \
                                                const ClassifierShape &, cudaStream_t);                      \
  template cudaError_t launchAccuracy<T>(const T *, const int32_t *, T *, double *, const ClassifierShape &, \
                                         int64_t, cudaStream_t);                                             \
  template cudaError_t launchMseLoss<T>(const T *, const T *, T *, double *, int64_t, cudaStream_t);         \
  template cudaError_t launchMseLossBackward<T>(const T *, const T *, const T *, T *, int64_t,               \
                                                cudaStream_t);                                               \
  template cudaError_t launchBceLoss<T>(const T *, const T *, T *, double *, int64_t, cudaStream_t);         \
  template cudaError_t launchBceLossBackward<T>(const T *, const T *, const T *, T *, int64_t, cudaStream_t);

DTNN_LOSS_INSTANCES(float)
DTNN_LOSS_INSTANCES(double)

} // namespace dtnn::cuda
