// Dropout's training forms (see Dropout.h): one thread an element, the hash as the reference's.
#include "backends/cuda/device/kernels/Dropout.h"
#include "backends/cuda/device/kernels/Common.cuh"

#include <algorithm>

namespace dtnn::cuda {

namespace {


// The splitmix64 finalizer, as the reference's mix64.
__device__ __forceinline__ uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ull;

// The key of one (seed, step) pair; draw d is mix64(key + d * kGolden).
__device__ __forceinline__ uint64_t dropoutKey(int64_t seed, int64_t step) {
  return mix64(mix64(static_cast<uint64_t>(seed) + kGolden) ^ static_cast<uint64_t>(step));
}

template <typename T> __device__ __forceinline__ T draw(uint64_t key, uint64_t d, const MaskSpec<T> &spec) {
  return (mix64(key + d * kGolden) >> 11) >= spec.threshold ? spec.keep : T(0);
}

template <typename T>
__global__ void dropoutTrain(const T *x, const int64_t *step, T *y, T *mask, int64_t n, uint64_t base,
                             MaskSpec<T> spec) {
  uint64_t key = dropoutKey(spec.seed, *step);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    T xi = x[i];
    T m = draw(key, base + static_cast<uint64_t>(i), spec);
    mask[i] = m;
    y[i] = xi * m;
  }
}

template <typename T>
__global__ void dropPathTrain(const T *x, const int64_t *step, T *y, T *mask, int64_t n, int64_t per,
                              int64_t first, MaskSpec<T> spec) {
  uint64_t key = dropoutKey(spec.seed, *step);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    T xi = x[i];
    T m = draw(key, static_cast<uint64_t>(first + i / per), spec);
    mask[i] = m;
    y[i] = xi * m;
  }
}

} // namespace

template <typename T>
cudaError_t launchDropoutTrain(const T *x, const int64_t *step, T *y, T *mask, int64_t n, uint64_t base,
                               MaskSpec<T> spec, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  dropoutTrain<T><<<blocksFor(n), kThreads, 0, stream>>>(x, step, y, mask, n, base, spec);
  return cudaGetLastError();
}

template <typename T>
cudaError_t launchDropPathTrain(const T *x, const int64_t *step, T *y, T *mask, int64_t samples, int64_t per,
                                int64_t first, MaskSpec<T> spec, cudaStream_t stream) {
  int64_t n = samples * per;
  if (n == 0) return cudaSuccess;
  dropPathTrain<T><<<blocksFor(n), kThreads, 0, stream>>>(x, step, y, mask, n, per, first, spec);
  return cudaGetLastError();
}

template cudaError_t launchDropoutTrain<float>(const float *, const int64_t *, float *, float *, int64_t,
                                               uint64_t, MaskSpec<float>, cudaStream_t);
template cudaError_t launchDropoutTrain<double>(const double *, const int64_t *, double *, double *, int64_t,
                                                uint64_t, MaskSpec<double>, cudaStream_t);
template cudaError_t launchDropPathTrain<float>(const float *, const int64_t *, float *, float *, int64_t,
                                                int64_t, int64_t, MaskSpec<float>, cudaStream_t);
template cudaError_t launchDropPathTrain<double>(const double *, const int64_t *, double *, double *, int64_t,
                                                 int64_t, int64_t, MaskSpec<double>, cudaStream_t);

} // namespace dtnn::cuda
