// The cuda backend's generated kernels: fused ops, fused_update ops, and
// every elementwise op the code generator knows run alone as a region of one
// op, each compiled from the CUDA source backends/cuda/RegionSource.h writes
// (NVRTC, in the device module, cached on disk by the source's hash).
#include "backends/cuda/CudaBackend.h"
#include "backends/cuda/CudaKernel.h"
#include "backends/cuda/RegionSource.h"
#include "ir/ops/FusedUpdate.h"
#include "runtime/UpdateGroups.h"

namespace dtnn::cuda {

namespace {

// The elements a fused_update's region is planned over: any size stands for all, as the kernel
// takes each group's size at run time.
constexpr int64_t kUpdatePlanSize = 4096;

std::vector<ir::TensorType> typesOf(const std::vector<runtime::BufferDesc> &descs) {
  std::vector<ir::TensorType> out;
  for (const runtime::BufferDesc &d : descs) out.push_back(d.type);
  return out;
}

// The code of region `body` at argument types `args`.
Expected<RegionCode> codeOf(const ir::Graph &body, const std::vector<ir::TensorType> &args) {
  Expected<runtime::LoopPlan> plan = runtime::planLoops(body, args, "", cudaKnowsOp);
  if (!plan) return plan.takeError();
  if (!runtime::storesComputeType(*plan))
    return Error::make("the cuda backend's generated kernels load and store f32 and f64 only");
  return regionCode(body, *plan);
}

// A region of `op` alone, over arguments of types `args`.
std::unique_ptr<ir::Graph> aloneInRegion(const ir::Op &op, const std::vector<ir::TensorType> &args,
                                         const std::vector<ir::TensorType> &results) {
  auto body = std::make_unique<ir::Graph>("");
  std::vector<ir::Value *> in;
  for (size_t i = 0; i < args.size(); ++i) in.push_back(body->addInput("a" + std::to_string(i), args[i]));
  ir::Op *copy = body->addOp(op.def(), in, op.attrs(), results, op.loc());
  body->setOutputs(copy->results());
  return body;
}

std::vector<bool> wholeArguments(const ir::Graph &body, const std::vector<ir::TensorType> &args) {
  std::vector<bool> whole(args.size(), false);
  Expected<runtime::LoopPlan> plan = runtime::planLoops(body, args, "", cudaKnowsOp);
  if (!plan) {
    consumeError(plan.takeError());
    return whole;
  }
  for (size_t i = 0; i < args.size(); ++i) {
    bool all = true;
    for (bool b : plan->spans[i]) all &= b;
    whole[i] = all;
  }
  return whole;
}

Expected<std::unique_ptr<runtime::Kernel>> regionKernel(const runtime::KernelRequest &r,
                                                        const ir::Graph &body,
                                                        std::unique_ptr<ir::Graph> owned) {
  auto *backend = dynamic_cast<CudaBackend *>(&r.backend);
  if (!backend) return Error::make("a cuda kernel was requested of another backend");
  std::vector<ir::TensorType> args = typesOf(r.in);
  Expected<RegionCode> code = codeOf(body, args);
  if (!code) return code.takeError();
  DeviceKernelSpec spec;
  spec.kind = "region";
  spec.op = &r.op;
  for (const ir::TensorType &t : args) spec.in.push_back(deviceBuffer(t));
  for (const ir::TensorType &t : r.out) spec.out.push_back(deviceBuffer(t));
  spec.workspaceBytes = regionWorkspace(*code, code->reduced.empty() ? ir::DType::F32 : args[0].dtype);
  spec.region = std::make_shared<const RegionCode>(std::move(*code));
  auto k = std::make_unique<CudaKernel>(backend->api(), std::move(spec), runtime::QueueKind::Compute,
                                        wholeArguments(body, args));
  if (owned) k->keepBody(std::move(owned));
  return std::unique_ptr<runtime::Kernel>(std::move(k));
}

Expected<std::unique_ptr<runtime::Kernel>> makeFused(const runtime::KernelRequest &r) {
  if (!r.op.body()) return Error::make("'fused' has no region");
  return regionKernel(r, *r.op.body(), nullptr);
}

bool claimsFused(const ir::Op &op, const std::vector<ir::TensorType> &in) {
  if (!op.body()) return false;
  Expected<RegionCode> code = codeOf(*op.body(), in);
  if (!code) consumeError(code.takeError());
  return bool(code);
}

// A fused_update's region over one group: every member flat, then the coefficients.
Expected<RegionCode> updateCode(const ir::Op &op, const std::vector<ir::TensorType> &in) {
  std::optional<ir::UpdateGroupCounts> g = ir::fusedUpdateGroups(op.attrs(), in.size());
  if (!op.body() || !g || in.empty())
    return Error::make("'fused_update' has no region or its operands do not fit it");
  std::vector<ir::TensorType> args(g->width(), ir::TensorType(in[0].dtype, {kUpdatePlanSize}));
  args.insert(args.end(), in.end() - int64_t(g->coefficients), in.end());
  return codeOf(*op.body(), args);
}

Expected<std::unique_ptr<runtime::Kernel>> makeFusedUpdate(const runtime::KernelRequest &r) {
  auto *backend = dynamic_cast<CudaBackend *>(&r.backend);
  if (!backend) return Error::make("a cuda kernel was requested of another backend");
  Expected<runtime::UpdateGroups> groups = runtime::updateGroups(r);
  if (!groups) return groups.takeError();
  Expected<RegionCode> code = updateCode(r.op, typesOf(r.in));
  if (!code) return code.takeError();
  DeviceKernelSpec spec;
  spec.kind = "region_update";
  spec.op = &r.op;
  // Every member in its parameter's buffer (plain on this backend), in device memory.
  for (const runtime::BufferDesc &d : groups->descs) spec.in.push_back(deviceBuffer(d.type));
  for (const ir::TensorType &t : r.out) spec.out.push_back(deviceBuffer(t));
  spec.region = std::make_shared<const RegionCode>(std::move(*code));
  return std::unique_ptr<runtime::Kernel>(new CudaKernel(
      backend->api(), std::move(spec), runtime::QueueKind::Compute, std::vector<bool>(r.in.size(), false)));
}

bool claimsFusedUpdate(const ir::Op &op, const std::vector<ir::TensorType> &in) {
  Expected<RegionCode> code = updateCode(op, in);
  if (!code) consumeError(code.takeError());
  return bool(code);
}

Expected<std::unique_ptr<runtime::Kernel>> makeAlone(const runtime::KernelRequest &r) {
  std::vector<ir::TensorType> args = typesOf(r.in);
  std::unique_ptr<ir::Graph> body = aloneInRegion(r.op, args, r.out);
  const ir::Graph &ref = *body;
  return regionKernel(r, ref, std::move(body));
}

bool claimsAlone(const ir::Op &op, const std::vector<ir::TensorType> &in) {
  std::vector<ir::TensorType> out;
  for (const ir::Value *v : op.results()) out.push_back(v->type());
  std::unique_ptr<ir::Graph> body = aloneInRegion(op, in, out);
  Expected<RegionCode> code = codeOf(*body, in);
  if (!code) consumeError(code.takeError());
  return bool(code);
}

// The elementwise ops the generator runs alone (every op it knows).
const char *const kAlone[] = {
    "add",          "sub",          "mul",           "div",           "relu",
    "relu_backward", "relu6",       "relu6_backward", "leaky_relu",   "leaky_relu_backward",
    "sigmoid",      "sigmoid_backward", "tanh",      "tanh_backward", "silu",
    "silu_backward", "hard_sigmoid", "hard_sigmoid_backward", "hard_swish",
    "hard_swish_backward", "scale", "rsqrt",         "sqrt",          "exp",
    "log",          "erf",          "pow",           "sum_like",      "gelu",
    "gelu_backward"};

} // namespace

void addRegionOps(std::vector<CudaOp> &ops) {
  std::vector<ir::DType> floats = {ir::DType::F32};
  ops.push_back({.op = "fused", .dtypes = floats, .claims = claimsFused, .make = makeFused});
  ops.push_back({.op = "fused_update", .dtypes = floats, .claims = claimsFusedUpdate, .make = makeFusedUpdate});
  for (const char *name : kAlone)
    ops.push_back({.op = name, .dtypes = floats, .claims = claimsAlone, .make = makeAlone});
}

} // namespace dtnn::cuda
