// Optimizer update ops: each updates a parameter and its state buffers in
// place from the parameter's gradient, the learning rate and the step count.
#include "ir/OpTable.h"
#include "ir/ops/ShapeUtil.h"

namespace dtnn::ir {

void registerOptimizerOps(OpTable &) {}

} // namespace dtnn::ir
