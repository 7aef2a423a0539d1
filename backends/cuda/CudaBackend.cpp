#include "backends/cuda/CudaBackend.h"

#include "backends/cuda/CudaKernel.h"
#include "runtime/BackendRegistry.h"
#include "runtime/HostMemory.h"

#include <cstdio>
#include <cstdlib>
#include <new>

namespace dtnn::cuda {

namespace {

// "13.0" from 13000, "9.19.0" from 91900.
std::string cudaVersion(int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); }
std::string tripleVersion(int v, int major) {
  return std::to_string(v / major) + "." + std::to_string(v % major / 100) + "." + std::to_string(v % 100);
}

Tf32 tf32Of(const std::string &s) { return s == "all" ? Tf32::All : s == "off" ? Tf32::Off : Tf32::Conv; }

} // namespace

std::string DeviceInfo::versions() const {
  return "runtime " + cudaVersion(runtimeVersion) + ", driver " + cudaVersion(driverVersion) +
         ", cuDNN " + tripleVersion(cudnnVersion, 10000) + ", cuBLAS " +
         tripleVersion(cublasVersion, 10000) + ", NVRTC " + std::to_string(nvrtcMajor) + "." +
         std::to_string(nvrtcMinor);
}

std::string cudaCacheDir(const std::string &requested) {
  if (requested == "off") return "";
  if (!requested.empty()) return requested + "/cuda";
  if (const char *env = std::getenv("DTNN_CUDA_CACHE"); env && *env)
    return std::string(env) == "off" ? "" : env;
  if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return std::string(xdg) + "/dtnn/cuda";
  if (const char *home = std::getenv("HOME"); home && *home)
    return std::string(home) + "/.cache/dtnn/cuda";
  return "";
}

CudaBackend::CudaBackend(const runtime::BackendOptions &o) : idle_(runtime::makeInlineQueue("idle")) {
  settings_.device = o.device;
  settings_.tf32 = tf32Of(o.tf32);
  settings_.deterministic = o.deterministic;
  settings_.kernelCache = cudaCacheDir(o.kernelCache);
  settings_.localRank = o.localRank;
  settings_.commTimeoutSeconds = o.commTimeoutSeconds;
  collectives_ = o.collectives;
  ranksOnNode_ = o.ranksOnNode;
  setNcclCollectives(o.collectives != "mpi");
}

CudaBackend::~CudaBackend() {
  compute_.reset();
  copy_.reset();
  consumeError(std::move(failure_));
}

std::string_view CudaBackend::name() const { return kBackendName; }

std::string CudaBackend::summary() const {
  if (!api_) return "";
  return "cuda: " + info_.name + " (" + info_.versions() + "); " + api_->summary() +
         "; peak device memory " + runtime::formatBytes(api_->peakBytes());
}

Error CudaBackend::start() {
  if (api_) return Error::success();
  Expected<const DeviceApi *> api = deviceApi();
  if (!api) return api.takeError();
  Expected<DeviceInfo> info = (*api)->start(settings_);
  if (!info) return info.takeError();
  info_ = *info;
  api_ = *api;
  // NCCL refuses two ranks on one device: ranks that share one reduce over MPI.
  if (collectives_ == "auto") setNcclCollectives(ranksOnNode_ <= info_.deviceCount);
  compute_ = api_->makeQueue("compute", 0);
  copy_ = api_->makeQueue("copy", 1);
  return Error::success();
}

Expected<std::vector<std::pair<double, double>>>
CudaBackend::timeAllreduces(runtime::Communicator &comm, double maxBytes, int repeats) {
  if (!api_ || !ncclCollectives())
    return Error::make("the cuda backend reduces through the host here (--collectives mpi)");
  return api_->timeAllreduces(comm, maxBytes, repeats);
}

void CudaBackend::fail(Error e) {
  std::lock_guard<std::mutex> lock(failureMu_);
  if (e && !failure_) failure_ = std::move(e);
  else consumeError(std::move(e));
}

void *CudaBackend::allocate(size_t bytes) {
  void *p = api_ ? api_->allocate(bytes) : nullptr;
  if (!p) throw std::bad_alloc();
  return p;
}

void CudaBackend::release(void *p) {
  if (api_) api_->release(p);
}

void *CudaBackend::allocateHost(size_t bytes) {
  void *p = api_ ? api_->allocateHost(bytes) : nullptr;
  if (!p) throw std::bad_alloc();
  return p;
}

void CudaBackend::releaseHost(void *p) {
  if (api_) api_->releaseHost(p);
}

void CudaBackend::copyToDevice(void *dst, const void *src, size_t bytes) {
  if (api_) fail(api_->copy(dst, src, bytes));
}

void CudaBackend::copyToHost(void *dst, const void *src, size_t bytes) {
  if (api_) fail(api_->copy(dst, src, bytes));
}

void CudaBackend::copyToDeviceOn(runtime::Queue &queue, void *dst, const void *src, size_t bytes) {
  if (!api_) return;
  // The copy kernel of a plan, launched alone: host (pinned) to device on the queue's stream.
  static const ir::TensorType bytesType(ir::DType::U8, {1});
  DeviceKernelSpec spec;
  spec.kind = "copy";
  auto k = api_->makeKernel(spec);
  if (!k) {
    fail(k.takeError());
    return;
  }
  std::shared_ptr<DeviceKernel> kernel = std::move(*k);
  queue.submit([kernel, &queue, dst, src, bytes] {
    runtime::KernelArgs a;
    a.in.push_back({const_cast<void *>(src), ir::TensorType(ir::DType::U8, {int64_t(bytes)})});
    a.out.push_back({dst, ir::TensorType(ir::DType::U8, {int64_t(bytes)})});
    runtime::ExecContext ctx{queue};
    return kernel->run(a, ctx);
  });
}

runtime::Queue &CudaBackend::computeQueue() { return compute_ ? *compute_ : *idle_; }
runtime::Queue &CudaBackend::copyQueue() { return copy_ ? *copy_ : *idle_; }

Error CudaBackend::synchronize() {
  Error e = Backend::synchronize();
  std::lock_guard<std::mutex> lock(failureMu_);
  if (!e) return std::exchange(failure_, Error::success());
  return e;
}

namespace {

// A CUDA graph of the module, replayed as a run.
class GraphRun final : public runtime::CapturedRun {
public:
  explicit GraphRun(std::unique_ptr<StepGraph> g) : g_(std::move(g)) {}
  Error replay(runtime::Queue &queue) override { return g_->replay(queue); }

private:
  std::unique_ptr<StepGraph> g_;
};

} // namespace

Expected<std::unique_ptr<runtime::CapturedRun>> CudaBackend::capture(
    runtime::Queue &origin, const std::function<Error()> &submit) {
  if (!api_) return Error::make("the cuda backend has no device to record work on");
  auto g = api_->capture(origin, submit);
  if (!g) return g.takeError();
  return std::unique_ptr<runtime::CapturedRun>(new GraphRun(std::move(*g)));
}

Expected<std::unique_ptr<runtime::Kernel>> CudaBackend::makeConversion(const runtime::BufferDesc &from,
                                                                       const runtime::BufferDesc &to) {
  if (from.type != to.type)
    return Error::make("the cuda backend cannot convert " + from.str() + " to " + to.str());
  DeviceKernelSpec spec;
  spec.in = {from};
  spec.out = {to};
  if (from.space != to.space) {
    if (!from.layout.isPlain() || !to.layout.isPlain() || from.bytes != to.bytes)
      return Error::make("the cuda backend copies plain buffers only between memory spaces, not " +
                         from.str() + " to " + to.str());
    spec.kind = "copy";
    return std::unique_ptr<runtime::Kernel>(
        new CudaKernel(api_, std::move(spec), runtime::QueueKind::Copy, {false}));
  }
  spec.kind = "convert";
  return std::unique_ptr<runtime::Kernel>(
      new CudaKernel(api_, std::move(spec), runtime::QueueKind::Compute, {false}));
}

namespace {

// Whether this machine has a GPU the module can start on (for `backend = auto`).
bool deviceAvailable() {
  Expected<const DeviceApi *> api = deviceApi();
  if (!api) {
    consumeError(api.takeError());
    return false;
  }
  Expected<DeviceInfo> info = (*api)->start(DeviceSettings{});
  if (!info) {
    consumeError(info.takeError());
    return false;
  }
  return true;
}

} // namespace

namespace {

// The kernel of request `r` for entry `op`: the plain device kernel its fields describe.
Expected<std::unique_ptr<runtime::Kernel>> makePlainKernel(const runtime::KernelRequest &r,
                                                           const CudaOp &op) {
  auto *backend = dynamic_cast<CudaBackend *>(&r.backend);
  if (!backend)
    return Error::make("a cuda kernel was requested of the " + std::string(r.backend.name()) + " backend");
  auto spec = plainKernelSpec(r, op);
  if (!spec) return spec.takeError();
  std::vector<bool> reusable(spec->in.size(), op.reuse);
  return std::unique_ptr<runtime::Kernel>(new CudaKernel(
      backend->api(), std::move(*spec), runtime::QueueKind::Compute, std::move(reusable)));
}

} // namespace

std::vector<CudaOp> cudaOps() {
  std::vector<CudaOp> ops;
  for (void (*family)(std::vector<CudaOp> &) :
       {addRegionOps, addConvOps, addNormOps, addPoolOps, addBlasOps, addAttentionOps, addLossOps,
        addSoftmaxOps, addReduceOps, addEncodingOps, addDropoutOps, addOptimizerOps,
        addLayerNormOps, addShapeOps, addCollectiveOps})
    family(ops);
  return ops;
}

Error registerCudaBackend() {
  static bool done = false;
  if (done) return Error::success();
  done = true;
  runtime::BackendEntry entry{kBackendName, 1, false,
                              "NVIDIA GPUs: cuDNN, cuBLAS and kernels generated from regions",
                              [](const runtime::BackendOptions &o) {
                                return std::unique_ptr<runtime::Backend>(new CudaBackend(o));
                              }};
  entry.available = deviceAvailable;
  if (Error e = runtime::registerBackend(std::move(entry))) return e;
  for (CudaOp &op : cudaOps()) {
    auto shared = std::make_shared<CudaOp>(std::move(op));
    runtime::KernelMaker make = shared->make;
    if (!make)
      make = [shared](const runtime::KernelRequest &r) { return makePlainKernel(r, *shared); };
    if (Error e = runtime::KernelRegistry::get().add(shared->op, kBackendName, shared->dtypes,
                                                     runtime::LayoutKind::Plain, make, shared->claims))
      return e;
  }
  return Error::success();
}

} // namespace dtnn::cuda
