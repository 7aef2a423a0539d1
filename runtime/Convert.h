// Converting one buffer between layouts outside a plan: parameters moving to
// the layout their kernels want, and checkpoints read and written in the
// canonical plain layout.
#pragma once

#include "ir/Error.h"
#include "runtime/BackendRegistry.h"

namespace dtnn::runtime {

// Converts `src` (laid out as `from`) into `dst` (laid out as `to`, of the
// same logical type) with the conversion kernel of the backend that owns the
// native side, through plain when both are native; waits until it is done.
Error convertBuffer(const BackendSet &backends, const BufferDesc &from, const void *src,
                    const BufferDesc &to, void *dst);

} // namespace dtnn::runtime
