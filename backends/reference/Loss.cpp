// Reference kernels of the ops declared in ir/ops/Loss.cpp.
#include "backends/reference/KernelUtil.h"

namespace dtnn::reference {

void registerLossKernels(KernelTable &) {}

} // namespace dtnn::reference
