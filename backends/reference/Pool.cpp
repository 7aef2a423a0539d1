// Reference kernels of the ops declared in ir/ops/Pool.cpp.
#include "backends/reference/KernelUtil.h"

namespace dtnn::reference {

void registerPoolKernels(KernelTable &) {}

} // namespace dtnn::reference
