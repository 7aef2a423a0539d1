// Reference kernels of the ops declared in ir/ops/Norm.cpp.
#include "backends/reference/KernelUtil.h"

namespace dtnn::reference {

void registerNormKernels(KernelTable &) {}

} // namespace dtnn::reference
