// The Shape family of the cuda backend's ops (placeholder until its kernels land).
#include "backends/cuda/CudaOps.h"

namespace dtnn::cuda {

void addShapeOps(std::vector<CudaOp> &) {}

} // namespace dtnn::cuda
