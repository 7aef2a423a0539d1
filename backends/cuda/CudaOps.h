// The ops the cuda backend takes, as libdtnn plans them without a device:
// one entry per op, declared by its family's file under backends/cuda/ops/
// beside the module's kernels of that family (backends/cuda/device/). An
// entry says at which element types the backend takes the op (of operand 0,
// or of result 0 for an op without operands), which ops of those it takes
// (attributes, ranks), the scratch memory its device kernel needs, and
// whether a result may take an operand's storage. Every value a cuda kernel
// reads or writes is a plain (row-major) buffer in device memory unless the
// entry's `layouts` chooses another.
#pragma once

#include "runtime/KernelRegistry.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace dtnn::cuda {

// The backend's name in the registries.
inline constexpr const char *kBackendName = "cuda";

struct CudaOp {
  std::string op;
  std::vector<ir::DType> dtypes = {ir::DType::F32};
  // Optional: whether the kernel takes `op` at these operand types; all when empty.
  runtime::KernelClaim claims;
  // Optional: the scratch bytes the device kernel needs at these operand and result types
  // (static), carved from the arena of device memory; none when empty.
  std::function<uint64_t(const ir::Op &op, const std::vector<ir::TensorType> &in,
                         const std::vector<ir::TensorType> &out)>
      workspace;
  // Whether results may take an operand's storage where the op table allows it (OperandSpec::
  // reuse): the device kernel reads each element before it writes the result's element at the
  // same offset, from the same thread.
  bool reuse = false;
  // Optional: the buffers the kernel wants its operands in and gives its results in, from the
  // descriptors its operands arrive in and its result types; plain device buffers when empty.
  std::function<Expected<std::pair<std::vector<runtime::BufferDesc>, std::vector<runtime::BufferDesc>>>(
      const runtime::KernelRequest &r)>
      layouts;
  // Optional: makes the kernel itself (a generated kernel), instead of the plain device kernel
  // the fields above describe.
  runtime::KernelMaker make;
};

// A plain device buffer of `type`.
runtime::BufferDesc deviceBuffer(const ir::TensorType &type);
// Every element type, for ops that move bytes (shape ops, copies).
std::vector<ir::DType> allDTypes();

// The families' entries, one function per file of backends/cuda/ops/.
void addConvOps(std::vector<CudaOp> &ops);
void addNormOps(std::vector<CudaOp> &ops);
void addPoolOps(std::vector<CudaOp> &ops);
void addBlasOps(std::vector<CudaOp> &ops);
void addAttentionOps(std::vector<CudaOp> &ops);
void addLossOps(std::vector<CudaOp> &ops);
void addSoftmaxOps(std::vector<CudaOp> &ops);
void addReduceOps(std::vector<CudaOp> &ops);
void addEncodingOps(std::vector<CudaOp> &ops);
void addDropoutOps(std::vector<CudaOp> &ops);
void addOptimizerOps(std::vector<CudaOp> &ops);
void addLayerNormOps(std::vector<CudaOp> &ops);
void addShapeOps(std::vector<CudaOp> &ops);
void addCollectiveOps(std::vector<CudaOp> &ops);
void addRegionOps(std::vector<CudaOp> &ops);

// Every entry of every family.
std::vector<CudaOp> cudaOps();

// Whether the backend takes the reductions (allreduce_start, allreduce_wait) on the device by
// NCCL, or leaves them to the reference backend over MPI on host copies (ranks sharing a GPU);
// the process's cuda backend sets it from BackendOptions::collectives.
void setNcclCollectives(bool on);
bool ncclCollectives();

} // namespace dtnn::cuda
