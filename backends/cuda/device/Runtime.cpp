// The device module's runtime: starting the device, its memory (with the
// peak the run reached), failures of the CUDA libraries as Errors, and the
// registry of device kernels.
#include "backends/cuda/device/Device.h"
#include "backends/cuda/device/StreamQueue.h"

#include <nvrtc.h>

#include <cassert>
#include <cstring>
#include <mutex>
#include <unordered_map>

namespace dtnn::cuda {

namespace {

DeviceSettings theSettings;
DeviceInfo theInfo;

std::mutex memoryMu;
std::unordered_map<void *, size_t> sizes;
uint64_t current = 0, peak = 0;

void track(void *p, size_t bytes) {
  std::lock_guard<std::mutex> lock(memoryMu);
  sizes[p] = bytes;
  current += bytes;
  peak = std::max(peak, current);
}

void untrack(void *p) {
  std::lock_guard<std::mutex> lock(memoryMu);
  auto it = sizes.find(p);
  if (it == sizes.end()) return;
  current -= it->second;
  sizes.erase(it);
}

} // namespace

DeviceKernel::~DeviceKernel() = default;
StepGraph::~StepGraph() = default;

const DeviceSettings &settings() { return theSettings; }
const DeviceInfo &deviceInfo() { return theInfo; }

Error check(cudaError_t e, const char *what) {
  if (e == cudaSuccess) return Error::success();
  return Error::make(std::string(what) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
}

Error check(cudnnStatus_t e, const char *what) {
  if (e == CUDNN_STATUS_SUCCESS) return Error::success();
  return Error::make(std::string(what) + ": " + cudnnGetErrorString(e));
}

Error check(cublasStatus_t e, const char *what) {
  if (e == CUBLAS_STATUS_SUCCESS) return Error::success();
  return Error::make(std::string(what) + ": " + cublasGetStatusName(e) + " (" + cublasGetStatusString(e) + ")");
}

Expected<Launch> launchOf(runtime::ExecContext &ctx) {
  StreamQueue *q = streamQueue(ctx.queue);
  if (!q) return Error::make("a cuda kernel was launched on the " + std::string(ctx.queue.name()) +
                             " queue, which is not a stream of the cuda backend");
  return q->launch();
}

Error DeviceOp::run(const runtime::KernelArgs &args, runtime::ExecContext &ctx) {
  Expected<Launch> l = launchOf(ctx);
  if (!l) return l.takeError();
  l->offset = ctx.offset();
  if (Error e = launch(args, *l)) return e;
  return check(cudaGetLastError(), "a kernel launch");
}

int64_t elementsOf(const ir::TensorType &t) {
  int64_t n = 1;
  for (int64_t d : t.dims) n *= d;
  return n;
}

int64_t elementsOf(const runtime::BufferDesc &d) {
  unsigned size = ir::dtypeSize(d.type.dtype);
  return size ? int64_t(d.bytes / size) : 0;
}

DeviceRegistry &DeviceRegistry::get() {
  static DeviceRegistry r;
  return r;
}

void DeviceRegistry::add(const std::string &kind, DeviceKernelMaker make) {
  bool fresh = makers_.emplace(kind, std::move(make)).second;
  assert(fresh && "a device kernel kind registered twice");
  (void)fresh;
}

const DeviceKernelMaker *DeviceRegistry::find(const std::string &kind) const {
  auto it = makers_.find(kind);
  return it == makers_.end() ? nullptr : &it->second;
}

std::vector<std::string> DeviceRegistry::kinds() const {
  std::vector<std::string> out;
  for (const auto &[kind, make] : makers_) out.push_back(kind);
  return out;
}

void registerDeviceKernels() {
  static std::once_flag once;
  std::call_once(once, [] {
    DeviceRegistry &r = DeviceRegistry::get();
    for (void (*family)(DeviceRegistry &) :
         {registerCopyKernels, registerRegionKernels, registerConvKernels, registerNormKernels,
          registerPoolKernels, registerBlasKernels, registerAttentionKernels, registerLossKernels,
          registerSoftmaxKernels, registerReduceKernels, registerEncodingKernels,
          registerDropoutKernels, registerOptimizerKernels, registerLayerNormKernels,
          registerShapeKernels, registerCollectiveKernels})
      family(r);
  });
}

Expected<DeviceInfo> startDevice(const DeviceSettings &s) {
  int runtime = 0, driver = 0;
  cudaRuntimeGetVersion(&runtime);
  cudaDriverGetVersion(&driver);
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e == cudaErrorInsufficientDriver || e == cudaErrorNoDevice || (e == cudaSuccess && count == 0)) {
    cudaGetLastError();
    return Error::make(driver == 0 ? "no CUDA driver is installed, so there is no GPU to run on"
                                   : "the CUDA driver finds no GPU");
  }
  if (Error err = check(e, "cudaGetDeviceCount")) return err;
  int device = s.localRank >= 0 ? s.localRank % count : s.device;
  if (device < 0 || device >= count)
    return Error::make("there is no GPU " + std::to_string(device) + " (this machine has " +
                       std::to_string(count) + ")");
  if (Error err = check(cudaSetDevice(device), "cudaSetDevice")) return err;
  cudaDeviceProp p{};
  if (Error err = check(cudaGetDeviceProperties(&p, device), "cudaGetDeviceProperties")) return err;
  DeviceInfo info;
  info.device = device;
  info.deviceCount = count;
  info.name = p.name;
  info.major = p.major;
  info.minor = p.minor;
  info.multiprocessors = p.multiProcessorCount;
  info.memoryBytes = p.totalGlobalMem;
  info.runtimeVersion = runtime;
  info.driverVersion = driver;
  info.cudnnVersion = int(cudnnGetVersion());
  int major = 0, minor = 0, patch = 0;
  cublasGetProperty(MAJOR_VERSION, &major);
  cublasGetProperty(MINOR_VERSION, &minor);
  cublasGetProperty(PATCH_LEVEL, &patch);
  info.cublasVersion = major * 10000 + minor * 100 + patch;
  nvrtcVersion(&info.nvrtcMajor, &info.nvrtcMinor);
  theSettings = s;
  theInfo = info;
  registerDeviceKernels();
  return info;
}

void *allocateDevice(size_t bytes) {
  void *p = nullptr;
  if (cudaMalloc(&p, bytes ? bytes : 256) != cudaSuccess) {
    cudaGetLastError();
    return nullptr;
  }
  cudaMemset(p, 0, bytes ? bytes : 256);
  cudaDeviceSynchronize();
  track(p, bytes);
  return p;
}

void releaseDevice(void *p) {
  if (!p) return;
  untrack(p);
  cudaFree(p);
}

void *allocatePinned(size_t bytes) {
  void *p = nullptr;
  if (cudaHostAlloc(&p, bytes ? bytes : 64, cudaHostAllocDefault) != cudaSuccess) {
    cudaGetLastError();
    return nullptr;
  }
  std::memset(p, 0, bytes ? bytes : 64);
  return p;
}

void releasePinned(void *p) {
  if (p) cudaFreeHost(p);
}

Error copySync(void *dst, const void *src, size_t bytes) {
  if (Error e = check(cudaDeviceSynchronize(), "cudaDeviceSynchronize")) return e;
  return check(cudaMemcpy(dst, src, bytes, cudaMemcpyDefault), "cudaMemcpy");
}

uint64_t peakDeviceBytes() {
  std::lock_guard<std::mutex> lock(memoryMu);
  return peak;
}

} // namespace dtnn::cuda
