// Reference kernels of the ops declared in ir/ops/Conv.cpp.
#include "backends/reference/KernelUtil.h"

namespace dtnn::reference {

void registerConvKernels(KernelTable &) {}

} // namespace dtnn::reference
