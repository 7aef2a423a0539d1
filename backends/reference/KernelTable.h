// The reference backend's kernels: plain, readable C++ for every op, forward
// and backward, templated on the element type so gradient checks can run in
// double precision. Each op family registers its kernels in the kernel
// registry from its own file (a registration function, which
// registerReferenceBackend calls).
#pragma once

#include "runtime/KernelRegistry.h"

#include <functional>
#include <string>

namespace dtnn::reference {

using runtime::KernelArgs;
using runtime::TensorView;
using KernelFn = std::function<void(const KernelArgs &)>;

// The reference backend's name in the registries.
inline constexpr const char *kBackendName = "reference";

// Registers reference kernels in the kernel registry, keeping the first failure.
class KernelTable {
public:
  explicit KernelTable(runtime::KernelRegistry &r) : r_(r) {}
  // The first registration that failed, or success.
  Error takeError() { return std::move(error_); }
  // Registers `fn` for `op` at every element type, on plain buffers.
  void add(const std::string &op, KernelFn fn);
  // Registers an elementwise update over whole buffers: operands with
  // operand 0's type share its layout, whatever it is, and the kernel sees
  // them as flat arrays of all their elements, padding included.
  void addSameLayout(const std::string &op, KernelFn fn);
  // Registers a kernel object made per op, on plain buffers, or on buffers
  // of the layouts `layouts` says.
  void addKernel(const std::string &op, runtime::KernelMaker make,
                 runtime::LayoutKind layouts = runtime::LayoutKind::Plain);

private:
  void keep(Error e) {
    if (e && !error_) error_ = std::move(e);
  }
  runtime::KernelRegistry &r_;
  Error error_;
};

// Registration functions, one per file, mirroring ir/ops/.
void registerConvKernels(KernelTable &t);
void registerDenseKernels(KernelTable &t);
void registerPoolKernels(KernelTable &t);
void registerNormKernels(KernelTable &t);
void registerSyncNormKernels(KernelTable &t);
void registerShapeKernels(KernelTable &t);
void registerElementwiseKernels(KernelTable &t);
void registerMathKernels(KernelTable &t);
void registerReduceKernels(KernelTable &t);
void registerLayerNormKernels(KernelTable &t);
void registerMatmulKernels(KernelTable &t);
void registerAttentionKernels(KernelTable &t);
void registerActivationKernels(KernelTable &t);
void registerDropoutKernels(KernelTable &t);
void registerEncodingKernels(KernelTable &t);
void registerLossKernels(KernelTable &t);
void registerOptimizerKernels(KernelTable &t);
void registerCollectiveKernels(KernelTable &t);
void registerFusedKernels(KernelTable &t);

} // namespace dtnn::reference
