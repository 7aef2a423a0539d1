// The Blas family of the cuda backend's ops (placeholder until its kernels land).
#include "backends/cuda/CudaOps.h"

namespace dtnn::cuda {

void addBlasOps(std::vector<CudaOp> &) {}

} // namespace dtnn::cuda
