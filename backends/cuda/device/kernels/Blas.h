// The dense family's own kernels beside cuBLAS's products: dense's
// epilogue (its bias, then its fused activation, as backends/reference/
// Dense.cpp applies them to each result row) and dense_backward_bias, the
// sum of the gradient's rows, as a deterministic two-stage sum: each
// segment of rows summed in row order into a partial row, then the partial
// rows added in segment order. Instantiated for float and double.
#pragma once

#include <cstdint>
#include <cuda_runtime.h>

namespace dtnn::cuda {

// dense's fused activation (its `act` attribute).
enum class DenseAct { None, Relu, Relu6, Sigmoid, Tanh };

// y[r, j] = act(y[r, j] + bias[j]) over y [rows, m] of `total` elements; a null bias adds
// nothing.
template <typename T>
cudaError_t launchDenseEpilogue(T *y, const T *bias, int64_t total, int64_t m, DenseAct act,
                                cudaStream_t stream);

// db[j] = the sum over r of dy[r, j], dy [rows, m]: the rows cut into `segments` ranges of
// ceil(rows / segments) rows (at most 65535 ranges), each summed in order into row s of
// `partial` [segments, m], then those summed in order; with one segment straight into db, and
// `partial` unused. rows and m must be positive.
template <typename T>
cudaError_t launchColumnSums(const T *dy, T *db, T *partial, int64_t rows, int64_t m, int64_t segments,
                             cudaStream_t stream);

} // namespace dtnn::cuda
