// What the backends of a run can execute, as fusion passes see it. A fused
// op must run where its parts ran: fusing a convolution with its activation
// is a gain only if the backend that ran the convolution runs the fused op
// too, instead of leaving it to a slower fallback. The runtime implements
// this from its kernel registry (runtime/train/FusionTargets.h); the passes ask it
// and hard-code no backend.
#pragma once

#include "ir/IR.h"

#include <functional>
#include <string>
#include <vector>

namespace dtnn::passes {

class FusionTarget {
public:
  virtual ~FusionTarget();
  // The name of the backend that would run `op`, with its attributes and
  // operand types as they stand; "" when none would.
  virtual std::string backendOf(const ir::Op &op) const = 0;
  // The backends of the run that register a kernel for op `name` at all, in
  // the order kernels are chosen (a kernel may still refuse a particular op):
  // a pass skips building a candidate that no fast backend could take.
  virtual std::vector<std::string> backendsFor(const std::string &name) const = 0;
};

// Whether `op`, changed in place by `fuse`, still runs on the backend that
// ran it before (always, without a target). When it does not, `undo`
// restores it and the answer is false.
bool fuseIfSameBackend(const FusionTarget *target, ir::Op &op,
                       const std::function<void(ir::Op &)> &fuse,
                       const std::function<void(ir::Op &)> &undo);

} // namespace dtnn::passes
