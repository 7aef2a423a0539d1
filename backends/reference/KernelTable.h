// The reference backend's kernels: plain, readable C++ for every op, forward
// and backward, templated on the element type so gradient checks can run in
// double precision. Each op family registers its kernels by op name from its
// own file.
#pragma once

#include "runtime/Backend.h"

#include <functional>
#include <map>
#include <string>

namespace dtnn::reference {

using runtime::KernelArgs;
using runtime::TensorView;
using KernelFn = std::function<void(const KernelArgs &)>;

class KernelTable {
public:
  // The process-wide table holding every reference kernel.
  static const KernelTable &get();

  void add(const std::string &op, KernelFn fn);
  const KernelFn *find(const std::string &op) const;

private:
  std::map<std::string, KernelFn> kernels_;
};

// Registration functions, one per file, mirroring ir/ops/.
void registerConvKernels(KernelTable &t);
void registerDenseKernels(KernelTable &t);
void registerPoolKernels(KernelTable &t);
void registerNormKernels(KernelTable &t);
void registerShapeKernels(KernelTable &t);
void registerElementwiseKernels(KernelTable &t);
void registerActivationKernels(KernelTable &t);
void registerDropoutKernels(KernelTable &t);
void registerEncodingKernels(KernelTable &t);
void registerLossKernels(KernelTable &t);
void registerOptimizerKernels(KernelTable &t);

} // namespace dtnn::reference
