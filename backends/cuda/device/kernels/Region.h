// The second kernel of a generated reduction cut into segments: each output
// the sum of its segments' partial results, in segment order.
#pragma once

#include <cstdint>
#include <cuda_runtime.h>

namespace dtnn::cuda {

// out[o] = sum over s < segments of work[s * outputs + o], in order of s.
cudaError_t launchSumSegments(float *out, const float *work, int64_t outputs, int64_t segments,
                              cudaStream_t stream);
cudaError_t launchSumSegments(double *out, const double *work, int64_t outputs, int64_t segments,
                              cudaStream_t stream);

} // namespace dtnn::cuda
