// Reference kernels of the ops declared in ir/ops/Activation.cpp.
#include "backends/reference/KernelUtil.h"

namespace dtnn::reference {

void registerActivationKernels(KernelTable &) {}

} // namespace dtnn::reference
