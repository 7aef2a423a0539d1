// Reference kernels of the ops declared in ir/ops/Dropout.cpp.
#include "backends/reference/KernelUtil.h"

namespace dtnn::reference {

void registerDropoutKernels(KernelTable &) {}

} // namespace dtnn::reference
