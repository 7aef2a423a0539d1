// The registration of the oneDNN backend, which dtnn::registerBuiltins calls
// in builds that have it.
#pragma once

#include "ir/Error.h"

namespace dtnn::onednn {

// Registers the oneDNN backend and its kernels through
// runtime::registerBackend and runtime::registerKernel (once; later calls do
// nothing).
Error registerOnednnBackend();

} // namespace dtnn::onednn
