// The registration of the reference backend, which dtnn::registerBuiltins calls.
#pragma once

#include "ir/Error.h"

namespace dtnn::reference {

// Registers the reference backend and every reference kernel through
// runtime::registerBackend and runtime::registerKernel (once; later calls do
// nothing).
Error registerReferenceBackend();

} // namespace dtnn::reference
