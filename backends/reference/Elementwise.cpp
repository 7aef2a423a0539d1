// Reference kernels of the ops declared in ir/ops/Elementwise.cpp.
#include "backends/reference/KernelUtil.h"

namespace dtnn::reference {

void registerElementwiseKernels(KernelTable &) {}

} // namespace dtnn::reference
