// Reference kernel of matmul (ir/ops/Matmul.cpp): for every matrix of the
// result (its batch index mapped to a's and b's through broadcasting), each
// row of the result is a sum of rows of op(B) scaled by a row of op(A), in k
// order, on one thread; rows run in parallel, so the result does not depend
// on the thread count.
#include "backends/reference/KernelUtil.h"

#include <algorithm>

namespace dtnn::reference {

namespace {

template <typename T> void matmulKernel(const KernelArgs &a) {
  bool ta = a.op->attrs().getBool("transpose_a"), tb = a.op->attrs().getBool("transpose_b");
  const std::vector<int64_t> &ad = a.in[0].type.dims, &bd = a.in[1].type.dims;
  const std::vector<int64_t> &yd = a.out[0].type.dims;
  int64_t m = yd[yd.size() - 2], n = yd.back();
  int64_t k = ta ? ad[ad.size() - 2] : ad.back();
  std::vector<int64_t> batch(yd.begin(), yd.end() - 2);
  std::vector<int64_t> offA = batchOffsets(batch, {ad.begin(), ad.end() - 2}, m * k);
  std::vector<int64_t> offB = batchOffsets(batch, {bd.begin(), bd.end() - 2}, k * n);
  const T *pa = a.in[0].as<T>(), *pb = a.in[1].as<T>();
  T *py = a.out[0].as<T>();
  // Element (i, p) of op(A) and row p of op(B) (contiguous unless transposed).
  int64_t aRow = ta ? 1 : k, aCol = ta ? m : 1;
  parallelFor(int64_t(offA.size()) * m, [&](int64_t item) {
    int64_t mat = item / m, i = item % m;
    const T *A = pa + offA[size_t(mat)], *B = pb + offB[size_t(mat)];
    T *y = py + (mat * m + i) * n;
    std::fill(y, y + n, T(0));
    for (int64_t p = 0; p < k; ++p) {
      T s = A[i * aRow + p * aCol];
      if (tb) {
        for (int64_t j = 0; j < n; ++j) y[j] += s * B[j * k + p];
      } else {
        const T *row = B + p * n;
#pragma omp simd
        for (int64_t j = 0; j < n; ++j) y[j] += s * row[j];
      }
    }
  });
}

} // namespace

void registerMatmulKernels(KernelTable &t) { DTNN_REF_KERNEL(t, "matmul", matmulKernel); }

} // namespace dtnn::reference
