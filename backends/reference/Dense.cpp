// Reference kernels of the ops declared in ir/ops/Dense.cpp. Every innermost
// loop runs over contiguous memory so the compiler vectorizes it; the outer
// loops run in parallel over independent output rows, so the results do not
// depend on the thread count.
#include "backends/reference/FusedActivation.h"
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

// The rows of x [N,...,K]: all its elements in rows of its last dimension.
int64_t rowsOf(const TensorView &x) {
  int64_t k = x.type.dims.back();
  return k ? x.numel() / k : 0;
}

// y [N,...,M] = act(x [N,...,K] * weight [M,K]^T (+ bias [M])), one row of y per iteration.
template <typename T> void denseKernel(const KernelArgs &a) {
  FusedAct act = fusedActOf(*a.op);
  const T *x = a.in[0].as<T>();
  const T *w = a.in[1].as<T>();
  const T *bias = a.in.size() > 2 ? a.in[2].as<T>() : nullptr;
  T *y = a.out[0].as<T>();
  int64_t n = rowsOf(a.in[0]), k = a.in[1].dim(1), m = a.in[1].dim(0);
  parallelFor(n, [&](int64_t i) {
    const T *xi = x + i * k;
    T *yi = y + i * m;
    for (int64_t j = 0; j < m; ++j) yi[j] = dot(xi, w + j * k, k) + (bias ? bias[j] : T(0));
    applyFusedAct(act, yi, m);
  });
}

// out [R,K] with row r = the sum over s < S of coef[r * rStride + s * sStride]
// times row s of src [S,K]; one row of out per iteration, with the sum inside it.
template <typename T>
void sumScaledRows(T *out, int64_t rows, const T *coef, int64_t rStride, int64_t sStride,
                   const T *src, int64_t terms, int64_t k) {
  parallelFor(rows, [&](int64_t r) {
    T *row = out + r * k;
    std::fill(row, row + k, T(0));
    for (int64_t s = 0; s < terms; ++s) axpy(row, coef[r * rStride + s * sStride], src + s * k, k);
  });
}

// dx [N,...,K] = dy [N,...,M] * weight [M,K].
template <typename T> void denseBackwardDataKernel(const KernelArgs &a) {
  int64_t n = rowsOf(a.in[0]), m = a.in[1].dim(0), k = a.in[1].dim(1);
  sumScaledRows(a.out[0].as<T>(), n, a.in[0].as<T>(), m, 1, a.in[1].as<T>(), m, k);
}

// dweight [M,K] = dy [N,...,M]^T * x [N,...,K], summing over every row.
template <typename T> void denseBackwardWeightsKernel(const KernelArgs &a) {
  int64_t n = rowsOf(a.in[0]), m = a.out[0].dim(0), k = a.out[0].dim(1);
  sumScaledRows(a.out[0].as<T>(), m, a.in[0].as<T>(), 1, m, a.in[1].as<T>(), n, k);
}

// dbias [M] = the sum of dy [N,...,M] over every row; small, so one thread.
template <typename T> void denseBackwardBiasKernel(const KernelArgs &a) {
  const T *dy = a.in[0].as<T>();
  T *db = a.out[0].as<T>();
  int64_t n = rowsOf(a.in[0]), m = a.out[0].dim(0);
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
