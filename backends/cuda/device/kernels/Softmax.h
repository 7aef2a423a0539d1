// softmax, log_softmax and their backward ops along one axis of a row-major
// tensor, as the reference evaluates them (backends/reference/Activation.cpp):
// the tensor is [outer, n, inner] around the axis, and each of its
// outer * inner rows of n elements (a stride of `inner` apart) is normalized
// on its own, subtracting the row's maximum before the exponentials. The
// sums along a row run in a fixed order that depends only on the sizes, so
// every run gives the same bits. Every element is read and written by one
// thread only, which reads it before writing it: a result may take the
// storage of an operand.
#pragma once

#include <cstdint>
#include <cuda_runtime.h>

namespace dtnn::cuda {

// The tensor around the axis: [outer, n, inner].
struct SoftmaxShape {
  int64_t outer = 1, n = 1, inner = 1;
};

// How the rows are covered: a warp per row with the row in registers (rows
// of at most kSoftmaxWarpRow elements), a block per row (longer rows), or a
// thread per row walking down it (rows a stride apart, where neighbouring
// threads then read neighbouring elements).
enum class SoftmaxMode { Empty, WarpRows, BlockRows, Columns };

// The longest row a warp takes (32 lanes of kSoftmaxWarpRow / 32 elements each).
constexpr int64_t kSoftmaxWarpRow = 512;

// The launch geometry of one shape, fixed when the kernel is made.
struct SoftmaxPlan {
  SoftmaxShape shape;
  SoftmaxMode mode = SoftmaxMode::Empty;
  int perLane = 1; // WarpRows: the row elements each lane holds (a power of 2, at most 16)
  int threads = 256;
  unsigned blocks = 1;
};

// The geometry for `shape` on a device of `multiprocessors` SMs.
SoftmaxPlan planSoftmax(const SoftmaxShape &shape, int multiprocessors);

// y = softmax(x) (`log` false: exp(x - m) * (1 / sum)) or log_softmax(x) (`log` true:
// x - (m + log(sum))), m the row's maximum, sum that of exp(x - m).
cudaError_t launchSoftmax(const float *x, float *y, const SoftmaxPlan &p, bool log, cudaStream_t stream);
cudaError_t launchSoftmax(const double *x, double *y, const SoftmaxPlan &p, bool log, cudaStream_t stream);

// softmax_backward (`log` false): dx = y (dy - sum(dy y)); log_softmax_backward (`log` true):
// dx = dy - exp(y) sum(dy); the sums along each row.
cudaError_t launchSoftmaxBackward(const float *dy, const float *y, float *dx, const SoftmaxPlan &p,
                                  bool log, cudaStream_t stream);
cudaError_t launchSoftmaxBackward(const double *dy, const double *y, double *dx, const SoftmaxPlan &p,
                                  bool log, cudaStream_t stream);

} // namespace dtnn::cuda
