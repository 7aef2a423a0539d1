// The operand groups of a fused_update op (ir/ops/Fused.cpp) as its kernels
// see them: per parameter a group of the parameter, its gradient and its
// state buffers, which the update runs over as whole buffers (padding
// included, which holds zeros in all of them and stays zero), so each group
// wants every member in the layout its parameter has; then the scalar
// coefficients every group shares.
#pragma once

#include "runtime/Kernel.h"

#include <cstdint>
#include <vector>

namespace dtnn::runtime {

struct UpdateGroups {
  size_t tensors = 0, width = 0, coefficients = 0;
  // Per group: the elements of its whole buffers, padding included.
  std::vector<int64_t> elements;
  // The descriptors the kernel wants its operands in.
  std::vector<BufferDesc> descs;

  // The operand index of member i (0: the parameter) of group k, and of
  // coefficient c.
  size_t member(size_t k, size_t i) const { return k * width + i; }
  size_t coefficient(size_t c) const { return tensors * width + c; }
  // The number of members a group updates in place: the parameter and its
  // states (all but the gradient).
  size_t written() const { return width - 1; }
};

// The groups of fused_update request `r`; fails when its attributes do not
// fit its operands.
Expected<UpdateGroups> updateGroups(const KernelRequest &r);

} // namespace dtnn::runtime
