// What the device module's kernels share: the launch context of a stream
// (its cuDNN and cuBLAS handles, the run's settings), failures of the CUDA
// libraries as dtnn Errors, the base class of a kernel that launches on a
// stream, and the registry of device kernels by kind (the op name), which
// each family of kernels fills from its own file.
#pragma once

#include "backends/cuda/DeviceApi.h"

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <map>
#include <string>

namespace dtnn::cuda {

// A stream and the library handles bound to it.
struct Launch {
  cudaStream_t stream = nullptr;
  cudnnHandle_t cudnn = nullptr;
  cublasHandle_t cublas = nullptr;
  cublasLtHandle_t lt = nullptr;
  const DeviceSettings *settings = nullptr;
  const DeviceInfo *info = nullptr;
  // The position of this rank's first sample in the step's global batch (ExecContext::offset),
  // for the kernels whose results follow the sample (dropout's masks).
  int64_t offset = 0;
};

// The launch context of the queue `ctx` runs on; fails when that is not a stream of the module.
Expected<Launch> launchOf(runtime::ExecContext &ctx);
// The settings and device the module started with.
const DeviceSettings &settings();
const DeviceInfo &deviceInfo();

// Success for cudaSuccess, else a failure naming `what` and the error: "cudnnConvolutionForward:
// CUDNN_STATUS_BAD_PARAM".
Error check(cudaError_t e, const char *what);
Error check(cudnnStatus_t e, const char *what);
Error check(cublasStatus_t e, const char *what);

// A kernel that launches its work on its queue's stream.
class DeviceOp : public DeviceKernel {
public:
  Error run(const runtime::KernelArgs &args, runtime::ExecContext &ctx) final;
  // Launches the work on l.stream; the kernel's buffers are args' device pointers.
  virtual Error launch(const runtime::KernelArgs &args, const Launch &l) = 0;
};

using DeviceKernelMaker = std::function<Expected<std::unique_ptr<DeviceKernel>>(const DeviceKernelSpec &)>;

// The device kernels of the module by kind.
class DeviceRegistry {
public:
  static DeviceRegistry &get();
  // Adds the maker of `kind`; a kind registered twice is a programming error (asserted).
  void add(const std::string &kind, DeviceKernelMaker make);
  const DeviceKernelMaker *find(const std::string &kind) const;
  std::vector<std::string> kinds() const;

private:
  std::map<std::string, DeviceKernelMaker> makers_;
};

// A kernel object of type K made from a spec, as a maker returns it.
template <typename K, typename... A> Expected<std::unique_ptr<DeviceKernel>> make(A &&...a) {
  return std::unique_ptr<DeviceKernel>(new K(std::forward<A>(a)...));
}

// The number of elements of a static type, and of a buffer with its layout's padding.
int64_t elementsOf(const ir::TensorType &t);
int64_t elementsOf(const runtime::BufferDesc &d);

// Counts of what the module did, for the run's summary: "compiled" and "loaded" (generated
// kernels), "measured" (convolution algorithm searches).
void countStat(const std::string &name, int64_t add = 1);
int64_t statOf(const std::string &name);

// A kernel whose result is its operand's bytes (reshapes, dropout at inference): a copy on the
// device, or nothing when the result took the operand's storage (Shape.cpp).
Expected<std::unique_ptr<DeviceKernel>> makeSameBytes(const DeviceKernelSpec &s);

// Registration functions, one per family file; registerDeviceKernels calls them all once.
void registerCopyKernels(DeviceRegistry &r);
void registerRegionKernels(DeviceRegistry &r);
void registerConvKernels(DeviceRegistry &r);
void registerNormKernels(DeviceRegistry &r);
void registerPoolKernels(DeviceRegistry &r);
void registerBlasKernels(DeviceRegistry &r);
void registerAttentionKernels(DeviceRegistry &r);
void registerLossKernels(DeviceRegistry &r);
void registerSoftmaxKernels(DeviceRegistry &r);
void registerReduceKernels(DeviceRegistry &r);
void registerEncodingKernels(DeviceRegistry &r);
void registerDropoutKernels(DeviceRegistry &r);
void registerOptimizerKernels(DeviceRegistry &r);
void registerLayerNormKernels(DeviceRegistry &r);
void registerShapeKernels(DeviceRegistry &r);
void registerCollectiveKernels(DeviceRegistry &r);
void registerDeviceKernels();

// DeviceApi::timeAllreduces (Collective.cpp).
Expected<std::vector<std::pair<double, double>>> timeNcclAllreduces(runtime::Communicator &comm,
                                                                    double maxBytes, int repeats);

} // namespace dtnn::cuda
