// Reference kernels of the ops declared in ir/ops/Shape.cpp.
#include "backends/reference/KernelUtil.h"

namespace dtnn::reference {

void registerShapeKernels(KernelTable &) {}

} // namespace dtnn::reference
