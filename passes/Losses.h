// How the autodiff pass turns the losses and metrics a train section names
// (declared by the run-settings schema, ir/RunSettings.h) into ops. A loss is an op of ir/ops/Loss.cpp; losses that
// compare with a target of the prediction's type (mse_loss, bce_loss) get
// the class labels one-hot encoded.
#pragma once

#include "ir/Builder.h"
#include "dtnn/Error.h"
#include "ir/RunSettings.h"

#include <string>
#include <vector>

namespace dtnn::passes {

// Appends loss `name` of `prediction` against i32 class labels `label`;
// returns the scalar loss. Unknown names get did-you-mean.
Expected<ir::Value *> emitLoss(ir::Builder &b, const std::string &name, ir::Value *prediction,
                               ir::Value *label);

// Appends one metric (`accuracy`, `topK` for K >= 1) of `prediction`;
// returns the scalar value.
Expected<ir::Value *> emitMetric(ir::Builder &b, const std::string &name, ir::Value *prediction,
                                 ir::Value *label);

} // namespace dtnn::passes
