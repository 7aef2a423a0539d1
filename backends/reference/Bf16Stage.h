// bf16 in the reference backend: every kernel runs in float32 on widened
// copies of its bf16 operands and rounds its bf16 results to nearest even,
// which is what bf16 means in the IR (compute in float32, round what is
// stored). One decorator over the float32 kernels gives every op a bf16 form
// that is the oracle for the others, without a second kernel per op.
#pragma once

#include "runtime/KernelRegistry.h"

namespace dtnn::reference {

// Whether a request has a bf16 operand or result.
bool hasBf16(const runtime::KernelRequest &r);

// A maker that, for a request with bf16 buffers, makes `make`'s kernel for the
// same request in float32 and stages the bf16 buffers around it; other
// requests go to `make` as they are.
runtime::KernelMaker stagedBf16(runtime::KernelMaker make);

} // namespace dtnn::reference
