// The interface between libdtnn and the cuda backend's device module
// (libdtnn-cuda.so, beside libdtnn), the only code that links the CUDA
// runtime (statically), cuDNN, cuBLAS and NVRTC. libdtnn plans for the cuda
// backend without it: which ops it takes, in which layouts and memory
// spaces, with how much workspace, and the CUDA source of generated
// kernels. The module is loaded when a run asks for a device; it starts the
// device, allocates its memory, makes its streams and makes a device kernel
// for each planned step.
#pragma once

#include "ir/Error.h"
#include "ir/IR.h"
#include "runtime/Kernel.h"
#include "runtime/Queue.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace dtnn::cuda {

// Where TF32 tensor cores may round float32 operands: PyTorch's defaults
// (convolutions only), everywhere, or nowhere (strict float32).
enum class Tf32 { Conv, All, Off };

struct DeviceSettings {
  int device = 0;
  Tf32 tf32 = Tf32::Conv;
  // Only algorithms that give the same bits on every run.
  bool deterministic = false;
  // Where compiled kernels are kept across runs ("" for nowhere).
  std::string kernelCache;
  // Under a launcher: the rank's place among the ranks of its node, which picks its GPU
  // (localRank mod the GPUs), instead of `device`; -1 for `device`.
  int localRank = -1;
  // How long a reduction may be in flight on the device before the job ends (--comm-timeout).
  double commTimeoutSeconds = 60;
};

// What the module found when it started.
struct DeviceInfo {
  std::string name; // "NVIDIA H100 80GB HBM3"
  int major = 0, minor = 0;
  int multiprocessors = 0;
  uint64_t memoryBytes = 0;
  int runtimeVersion = 0, driverVersion = 0;
  int device = 0, deviceCount = 0; // the GPU started, of this machine's
  int cudnnVersion = 0, cublasVersion = 0, nvrtcMajor = 0, nvrtcMinor = 0;
  // "runtime 13.0, driver 13.1, cuDNN 9.19.0, cuBLAS 13.1.0, NVRTC 13.0"
  std::string versions() const;
};

// A kernel generated from a region: its CUDA source and how it is launched.
struct RegionCode {
  // How the threads cover the domain: one element each (Map); one block per
  // reduced output, its threads summing along the innermost dimensions
  // (ReduceInner); one thread per reduced output, summing down the outer
  // dimensions (ReduceOuter).
  enum class Shape { Map, ReduceInner, ReduceOuter };
  Shape shape = Shape::Map;
  std::string source; // CUDA C++ for NVRTC, one extern "C" __global__ function
  std::string entry;  // that function's name
  std::string key;    // what the source is cached under: a hash of it
  // The merged sizes of the domain, outermost first; the kernel takes them
  // at run time, so that one compiled kernel serves every size.
  std::vector<int64_t> sizes;
  int64_t elements = 0; // of the domain
  // For the reductions: the outputs each reduced yield has, the elements
  // summed into each, and the segments those are cut into (each summed by
  // its own block or thread into the workspace, then the segments added up
  // in order by a second kernel, `entry` + "_finish").
  int64_t outputs = 1, length = 1, segments = 1;
  std::vector<bool> reduced; // per yield
  int threads = 256;
};

// What one device kernel is made for: a step of a plan, as libdtnn planned it.
struct DeviceKernelSpec {
  // The op's name; "copy" for a copy between memory spaces, "convert" for a
  // layout conversion on the device.
  std::string kind;
  const ir::Op *op = nullptr; // null for copies and conversions; outlives the kernel
  std::vector<runtime::BufferDesc> in, out;
  uint64_t workspaceBytes = 0;
  // For kernels generated from a region (fused ops, and elementwise ops run
  // as a region of one op); for fused_update, the region of one group.
  std::shared_ptr<const RegionCode> region;
};

// A kernel of the module: launched on the stream of the queue its context
// names, with device pointers (and pinned host pointers for copies).
class DeviceKernel {
public:
  virtual ~DeviceKernel();
  virtual Error run(const runtime::KernelArgs &args, runtime::ExecContext &ctx) = 0;
};

// A train step (or any run of a plan) captured once and replayed.
class StepGraph {
public:
  virtual ~StepGraph();
  // Launches the captured work on `queue` (a stream of the module).
  virtual Error replay(runtime::Queue &queue) = 0;
};

// What the module hands libdtnn. The version changes with this file.
struct DeviceApi {
  static constexpr int kVersion = 2;
  int version = kVersion;
  // Starts the CUDA runtime on settings.device; fails with why (no driver, no device, a library
  // that does not load).
  Expected<DeviceInfo> (*start)(const DeviceSettings &settings);
  // Device memory, and pinned host memory, zero-filled; null when refused.
  void *(*allocate)(size_t bytes);
  void (*release)(void *p);
  void *(*allocateHost)(size_t bytes);
  void (*releaseHost)(void *p);
  // A synchronous copy in any direction.
  Error (*copy)(void *dst, const void *src, size_t bytes);
  // A queue on a stream of its own; `priority` 0 is the default, 1 a higher one (copies).
  std::unique_ptr<runtime::Queue> (*makeQueue)(const std::string &name, int priority);
  Expected<std::unique_ptr<DeviceKernel>> (*makeKernel)(const DeviceKernelSpec &spec);
  // The kinds makeKernel knows, sorted.
  std::vector<std::string> (*kinds)();
  // Captures the work `submit` launches on `origin` (and the queues it joins through device
  // events) as a graph.
  Expected<std::unique_ptr<StepGraph>> (*capture)(runtime::Queue &origin,
                                                  const std::function<Error()> &submit);
  // Compiles a region's source for `arch` ("sm_90") without a device; the cubin's size.
  Expected<size_t> (*compileRegion)(const RegionCode &code, const std::string &arch);
  // What the module did that a profile should tell: kernels compiled and loaded from the cache,
  // algorithms measured, peak device memory.
  std::string (*summary)();
  // The most device memory allocated at once so far.
  uint64_t (*peakBytes)();
  // NCCL allreduces of device memory timed over `comm`'s ranks (Backend::timeAllreduces).
  Expected<std::vector<std::pair<double, double>>> (*timeAllreduces)(runtime::Communicator &comm,
                                                                     double maxBytes, int repeats);
};

// The module's one exported symbol and file name.
inline constexpr const char *kDeviceSymbol = "dtnn_cuda_device_api";
inline constexpr const char *kDeviceModule = "libdtnn-cuda.so";

// The module's interface, loading it on first use; fails with why it cannot be loaded.
Expected<const DeviceApi *> deviceApi();
// Whether deviceApi() has loaded the module.
bool deviceModuleLoaded();

} // namespace dtnn::cuda
