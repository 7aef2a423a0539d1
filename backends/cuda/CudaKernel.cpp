#include "backends/cuda/CudaKernel.h"

namespace dtnn::cuda {

runtime::BufferDesc deviceBuffer(const ir::TensorType &type) {
  runtime::BufferDesc d = runtime::BufferDesc::plain(type);
  d.space = runtime::MemorySpace::Device;
  return d;
}

std::vector<ir::DType> allDTypes() {
  return {ir::DType::F32, ir::DType::F64, ir::DType::I32, ir::DType::I64, ir::DType::U8, ir::DType::Bool};
}

namespace {

std::vector<ir::TensorType> typesOf(const std::vector<runtime::BufferDesc> &descs) {
  std::vector<ir::TensorType> out;
  for (const runtime::BufferDesc &d : descs) out.push_back(d.type);
  return out;
}

} // namespace

CudaKernel::CudaKernel(const DeviceApi *api, DeviceKernelSpec spec, runtime::QueueKind queue,
                       std::vector<bool> reusable)
    : Kernel(typesOf(spec.in), typesOf(spec.out)), api_(api), spec_(std::move(spec)),
      queue_(queue), reusable_(std::move(reusable)) {
  in_ = spec_.in;
  out_ = spec_.out;
}

CudaKernel::~CudaKernel() = default;

bool CudaKernel::allowsReuse(size_t operand, size_t result) const {
  (void)result;
  return operand < reusable_.size() && reusable_[operand];
}

Error CudaKernel::bind() {
  if (!api_) return Error::success(); // a plan only: no device kernel
  auto k = api_->makeKernel(spec_);
  if (!k) return k.takeError();
  device_ = std::move(*k);
  return Error::success();
}

Error CudaKernel::run(const runtime::KernelArgs &args, runtime::ExecContext &ctx) {
  if (!device_) return Error::make("the cuda backend planned this kernel without a device to run it on");
  return device_->run(args, ctx);
}

Expected<DeviceKernelSpec> plainKernelSpec(const runtime::KernelRequest &r, const CudaOp &op) {
  DeviceKernelSpec spec;
  spec.kind = r.op.name();
  spec.op = &r.op;
  if (op.layouts) {
    auto descs = op.layouts(r);
    if (!descs) return descs.takeError();
    spec.in = std::move(descs->first);
    spec.out = std::move(descs->second);
  } else {
    for (const runtime::BufferDesc &d : r.in) spec.in.push_back(deviceBuffer(d.type));
    for (const ir::TensorType &t : r.out) spec.out.push_back(deviceBuffer(t));
  }
  if (op.workspace) spec.workspaceBytes = op.workspace(r.op, typesOf(r.in), r.out);
  return spec;
}

} // namespace dtnn::cuda
