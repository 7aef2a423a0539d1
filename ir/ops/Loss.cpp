// Losses and metrics: softmax_cross_entropy, nll_loss, mse_loss, bce_loss,
// their backward ops, and accuracy (top-k).
#include "ir/OpTable.h"
#include "ir/ops/ShapeUtil.h"

namespace dtnn::ir {

void registerLossOps(OpTable &) {}

} // namespace dtnn::ir
