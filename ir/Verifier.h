// Structural and type checks of a module: operand counts and kinds,
// attributes (known, of the declared kind), result types equal to what the
// shape rule infers, SSA dominance, outputs matching the graph signature,
// unique parameter names.
#pragma once

#include "ir/IR.h"

#include <vector>

namespace dtnn::ir {

// Returns one diagnostic per problem found (empty when the module is valid).
// Problems with IR that has no loc(...) point at `positions` when given: the
// place in the .dtir text the module was read from.
std::vector<Diagnostic> verifyModule(const Module &m, const TextPositions *positions = nullptr);

} // namespace dtnn::ir
