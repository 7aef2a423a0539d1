// The Collective family of the cuda backend (ir/ops/Collective.cpp): allreduce_start and
// allreduce_wait on the device by NCCL (backends/cuda/device/Collective.cpp), the gradients
// never leaving it. A run whose ranks share a GPU reduces over MPI instead (NCCL refuses two
// ranks on one device): then the backend takes neither op, and the reference backend reduces
// host copies of the buckets, staged through pinned memory by the plan's copy steps.
#include "backends/cuda/CudaOps.h"

#include <atomic>

namespace dtnn::cuda {

namespace {

std::atomic<bool> gNccl{true};

bool claimsWithNccl(const ir::Op &, const std::vector<ir::TensorType> &) { return gNccl; }

} // namespace

void setNcclCollectives(bool on) { gNccl = on; }
bool ncclCollectives() { return gNccl; }

void addCollectiveOps(std::vector<CudaOp> &ops) {
  ops.push_back({.op = "allreduce_start", .dtypes = {ir::DType::F32, ir::DType::F64},
                 .claims = claimsWithNccl});
  ops.push_back({.op = "allreduce_wait", .dtypes = {ir::DType::Token}, .claims = claimsWithNccl});
}

} // namespace dtnn::cuda
