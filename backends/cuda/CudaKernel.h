// The kernel of a step planned for the cuda backend: its operand and result
// buffers (device memory, or pinned host memory for a copy's host side), its
// workspace and whether results may take operands' storage are fixed when
// the plan is made, without a device; binding asks the device module for the
// device kernel, when the backend runs on a device (its started module's interface; none for a
// backend that only plans).
#pragma once

#include "backends/cuda/CudaOps.h"
#include "backends/cuda/DeviceApi.h"

namespace dtnn::cuda {

class CudaKernel final : public runtime::Kernel {
public:
  // `reusable[i]`: whether results may take operand i's storage.
  // `api`: the device module the backend started, or null for a backend that only plans.
  CudaKernel(const DeviceApi *api, DeviceKernelSpec spec, runtime::QueueKind queue,
             std::vector<bool> reusable);
  ~CudaKernel() override;

  uint64_t workspaceBytes() const override { return spec_.workspaceBytes; }
  bool allowsReuse(size_t operand, size_t result) const override;
  runtime::QueueKind queue() const override { return queue_; }
  Error bind() override;
  Error run(const runtime::KernelArgs &args, runtime::ExecContext &ctx) override;

  const DeviceKernelSpec &spec() const { return spec_; }
  // Keeps the region the spec's code was generated from (an elementwise op's region of one op).
  void keepBody(std::unique_ptr<ir::Graph> body) { body_ = std::move(body); }

private:
  const DeviceApi *api_;
  DeviceKernelSpec spec_;
  runtime::QueueKind queue_;
  std::vector<bool> reusable_;
  std::unique_ptr<DeviceKernel> device_;
  // A region of one op that the kernel owns (an elementwise op run as a generated kernel).
  std::unique_ptr<ir::Graph> body_;
};

// The spec of the plain device kernel that entry `op` describes for request `r`.
Expected<DeviceKernelSpec> plainKernelSpec(const runtime::KernelRequest &r, const CudaOp &op);

} // namespace dtnn::cuda
