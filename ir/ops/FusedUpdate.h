// How a fused_update's operands group (ir/ops/Fused.cpp): `tensors` groups of
// a parameter, its gradient and `states` state buffers, then the
// coefficients every group shares. The shape rule, the kernels and the jit's
// plan read the groups through this one function.
#pragma once

#include "ir/Attributes.h"

#include <cstddef>
#include <optional>

namespace dtnn::ir {

struct UpdateGroupCounts {
  size_t tensors = 0, states = 0, coefficients = 0;
  size_t width() const { return 2 + states; } // operands of one group
};

// The groups that `operands` operands make under a fused_update's attributes;
// nothing when they do not fit.
std::optional<UpdateGroupCounts> fusedUpdateGroups(const AttrMap &attrs, size_t operands);

} // namespace dtnn::ir
