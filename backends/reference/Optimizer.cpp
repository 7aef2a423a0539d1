// Reference kernels of the ops declared in ir/ops/Optimizer.cpp.
#include "backends/reference/KernelUtil.h"

namespace dtnn::reference {

void registerOptimizerKernels(KernelTable &) {}

} // namespace dtnn::reference
