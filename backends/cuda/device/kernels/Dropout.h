// Dropout's training forms on the device, with the masks of
// backends/reference/Dropout.cpp bit for bit: the same splitmix64 hash of
// (seed, step) and of each draw's index in the global batch, the same 53-bit
// comparison with the rate's threshold. Each gives y = x * mask and the mask
// (0 or 1 / (1 - rate)); every element is read before its results are
// written, by the same thread, so y may be x. Instantiated for float and
// double.
#pragma once

#include <cstdint>
#include <cuda_runtime.h>

namespace dtnn::cuda {

// How a training form draws its mask: the seed attribute, the draws below `threshold` (rate *
// 2^53, truncated) are dropped, the kept ones scale by `keep` (1 / (1 - rate) in the type).
template <typename T> struct MaskSpec {
  int64_t seed;
  uint64_t threshold;
  T keep;
};

// dropout_train over n elements: draw base + i for element i; `step` the device's i64 step.
template <typename T>
cudaError_t launchDropoutTrain(const T *x, const int64_t *step, T *y, T *mask, int64_t n, uint64_t base,
                               MaskSpec<T> spec, cudaStream_t stream);
// drop_path_train over `samples` samples of `per` elements each: draw first + s for sample s.
template <typename T>
cudaError_t launchDropPathTrain(const T *x, const int64_t *step, T *y, T *mask, int64_t samples, int64_t per,
                                int64_t first, MaskSpec<T> spec, cudaStream_t stream);

} // namespace dtnn::cuda
