// Reference kernels of the ops declared in ir/ops/Dense.cpp.
#include "backends/reference/KernelUtil.h"

namespace dtnn::reference {

void registerDenseKernels(KernelTable &) {}

} // namespace dtnn::reference
