// Dropout in training: dropout_train draws a deterministic mask.
#include "ir/OpTable.h"
#include "ir/ops/ShapeUtil.h"

namespace dtnn::ir {

void registerDropoutOps(OpTable &) {}

} // namespace dtnn::ir
