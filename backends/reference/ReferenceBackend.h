// The reference backend: host memory and the plain C++ kernels of
// KernelTable, the numerical oracle later backends are tested against.
#pragma once

#include "runtime/Backend.h"

#include <memory>

namespace dtnn::reference {

std::unique_ptr<runtime::Backend> createReferenceBackend(const runtime::BackendOptions &opts);

} // namespace dtnn::reference
