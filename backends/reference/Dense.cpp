// Reference kernels of the ops declared in ir/ops/Dense.cpp. Every innermost
// loop runs over contiguous memory so the compiler vectorizes it; the outer
// loops run in parallel over independent output rows, so the results do not
// depend on the thread count.
#include "backends/reference/KernelUtil.h"

#include <algorithm>

namespace dtnn::reference {

namespace {

// The dot product of two contiguous vectors of length n.
template <typename T> T dot(const T *a, const T *b, int64_t n) {
  T acc = 0;
#pragma omp simd reduction(+ : acc)
  for (int64_t i = 0; i < n; ++i) acc += a[i] * b[i];
  return acc;
}

// y += alpha * x over n contiguous elements.
template <typename T> void axpy(T *y, T alpha, const T *x, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] += alpha * x[i];
}

// y [N,M] = x [N,K] * weight [M,K]^T (+ bias [M]), one row of y per iteration.
template <typename T> void denseKernel(const KernelArgs &a) {
  const T *x = a.in[0].as<T>();
  const T *w = a.in[1].as<T>();
  const T *bias = a.in.size() > 2 ? a.in[2].as<T>() : nullptr;
  T *y = a.out[0].as<T>();
  int64_t n = a.in[0].dim(0), k = a.in[0].dim(1), m = a.in[1].dim(0);
  parallelFor(n, [&](int64_t i) {
    const T *xi = x + i * k;
    T *yi = y + i * m;
    for (int64_t j = 0; j < m; ++j) yi[j] = dot(xi, w + j * k, k) + (bias ? bias[j] : T(0));
  });
}

// dx [N,K] = dy [N,M] * weight [M,K], one row of dx per iteration.
template <typename T> void denseBackwardDataKernel(const KernelArgs &a) {
  const T *dy = a.in[0].as<T>();
  const T *w = a.in[1].as<T>();
  T *dx = a.out[0].as<T>();
  int64_t n = a.in[0].dim(0), m = a.in[0].dim(1), k = a.in[1].dim(1);
  parallelFor(n, [&](int64_t i) {
    T *dxi = dx + i * k;
    std::fill(dxi, dxi + k, T(0));
    for (int64_t j = 0; j < m; ++j) axpy(dxi, dy[i * m + j], w + j * k, k);
  });
}

// dweight [M,K] = dy [N,M]^T * x [N,K], one row of dweight per iteration with
// the sum over the batch inside it.
template <typename T> void denseBackwardWeightsKernel(const KernelArgs &a) {
  const T *dy = a.in[0].as<T>();
  const T *x = a.in[1].as<T>();
  T *dw = a.out[0].as<T>();
  int64_t n = a.in[0].dim(0), m = a.in[0].dim(1), k = a.in[1].dim(1);
  parallelFor(m, [&](int64_t j) {
    T *dwj = dw + j * k;
    std::fill(dwj, dwj + k, T(0));
    for (int64_t i = 0; i < n; ++i) axpy(dwj, dy[i * m + j], x + i * k, k);
  });
}

// dbias [M] = the sum of dy [N,M] over the batch; small, so one thread.
template <typename T> void denseBackwardBiasKernel(const KernelArgs &a) {
  const T *dy = a.in[0].as<T>();
  T *db = a.out[0].as<T>();
  int64_t n = a.in[0].dim(0), m = a.in[0].dim(1);
  std::fill(db, db + m, T(0));
  for (int64_t i = 0; i < n; ++i) axpy(db, T(1), dy + i * m, m);
}

} // namespace

void registerDenseKernels(KernelTable &t) {
  DTNN_REF_KERNEL(t, "dense", denseKernel);
  DTNN_REF_KERNEL(t, "dense_backward_data", denseBackwardDataKernel);
  DTNN_REF_KERNEL(t, "dense_backward_weights", denseBackwardWeightsKernel);
  DTNN_REF_KERNEL(t, "dense_backward_bias", denseBackwardBiasKernel);
}

} // namespace dtnn::reference
