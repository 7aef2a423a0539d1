// The activation an op may apply to its own result (its `act` attribute, set
// by the fuse-activation pass): conv2d, dense, batchnorm, batchnorm_train and
// add declare it. Only activations
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

// The shape rules' check of `act` on an op (named `op` in messages) whose
// result has element type `result`.
Error checkFusedActivation(InferCtx &ctx, const std::string &op, DType result);

// The op's fused activation: "" when it has none (no `act`, or "none").
std::string fusedActivationOf(const Op &op);

// Whether ops of `def` take a fused activation (declare `act`).
bool takesFusedActivation(const OpDef &def);

// The op without a fused activation whose first result is `v`, a
// floating-point tensor, when the op takes one; else null: what
// fuse-activation may fold the activation reading `v` into.
Op *unfusedProducerOf(const Value *v);

// The same, limited to conv2d and dense without a residual: what
// fold-batchnorm folds into and fuse-residual-add fuses into.
Op *unfusedLayerOf(const Value *v);

// The residual a conv2d may add before its activation (attribute
// residual=true, set by the fuse-residual-add pass): its last operand r, of
// the result's type, so that y = act(conv2d(x, w) + b + r) in one kernel
// (oneDNN's sum post-op). The result may take r's storage.
AttrSpec residualAttr();
bool hasResidual(const Op &op);
// The operands of the layer itself (x, weight and bias, if any): all but the
// residual.
size_t layerOperandCount(const Op &op);

// What the op's kernel runs after the op itself, as the plan names it:
// "+add" for a residual, then "+<act>"; "" for neither.
std::string fusedEpilogueSuffix(const Op &op);

// The kernel of the op as plans and profiles name it: the op with its
// epilogue ("conv2d+add+relu"), and for an op with a region the ops it
// absorbed ("fused(mul+sigmoid_backward+sum_like)").
std::string kernelLabel(const Op &op);

// `attrs` without `act` and `residual`, for the backward ops of a fused op.
AttrMap withoutFusedActivation(AttrMap attrs);

// The gradient with respect to the op's pre-activation result: dy itself
// when the op has no activation, else `<act>_backward(dy, y)` with y the
// op's result; null when ctx.b fails to create the op (its takeError() says
// why).
Value *preActivationGradient(GradCtx &ctx, Value *dy);

} // namespace dtnn::ir
