#include "backends/cuda/device/kernels/Region.h"

namespace dtnn::cuda {

namespace {

template <typename T>
__global__ void sumSegments(T *out, const T *work, int64_t outputs, int64_t segments) {
  int64_t o = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (o >= outputs) return;
  T sum = T(0);
  for (int64_t s = 0; s < segments; ++s) sum += work[s * outputs + o];
  out[o] = sum;
}

template <typename T>
cudaError_t launch(T *out, const T *work, int64_t outputs, int64_t segments, cudaStream_t stream) {
  if (outputs == 0) return cudaSuccess;
  unsigned blocks = unsigned((outputs + 255) / 256);
  sumSegments<T><<<blocks, 256, 0, stream>>>(out, work, outputs, segments);
  return cudaGetLastError();
}

} // namespace

cudaError_t launchSumSegments(float *out, const float *work, int64_t outputs, int64_t segments,
                              cudaStream_t stream) {
  return launch(out, work, outputs, segments, stream);
}

cudaError_t launchSumSegments(double *out, const double *work, int64_t outputs, int64_t segments,
                              cudaStream_t stream) {
  return launch(out, work, outputs, segments, stream);
}

} // namespace dtnn::cuda
