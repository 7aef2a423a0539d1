// The activation a convolution or dense op may apply to its own result (its
// `act` attribute, set by the fuse-conv-bias-act pass). Only activations
// whose gradient can be taken from the result qualify, so that the
// pre-activation value need not exist at all: relu and relu6 pass the
// gradient where the result is strictly inside their linear range, sigmoid
// and tanh compute it from the result anyway.
#pragma once

#include "ir/OpDef.h"

#include <string>
#include <vector>

namespace dtnn::ir {

// "relu", "relu6", "sigmoid", "tanh": the activations that fuse.
const std::vector<std::string> &fusableActivations();
bool isFusableActivation(const std::string &name);

// The `act` attribute's declaration: a string, "none" by default.
AttrSpec fusedActivationAttr();

// The shape rules' check of `act`; false after ctx.fail.
bool checkFusedActivation(InferCtx &ctx, const std::string &op);

// The op's fused activation: "" when it has none (no `act`, or "none").
std::string fusedActivationOf(const Op &op);

// The conv2d or dense op without a fused activation that produced `v`, or
// null: what fusion passes may fold the next op into.
Op *unfusedLayerOf(const Value *v);

// `attrs` without `act`, for the backward ops of a fused op.
AttrMap withoutFusedActivation(AttrMap attrs);

// The gradient with respect to the op's pre-activation result: dy itself
// when the op has no activation, else `<act>_backward(dy, y)` with y the
// op's result; null after ctx.fail.
Value *preActivationGradient(GradCtx &ctx, Value *dy);

} // namespace dtnn::ir
