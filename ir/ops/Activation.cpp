// Activations: elementwise nonlinearities on floating-point tensors, and the
// softmax family, which normalizes along one axis.
#include "ir/OpTable.h"
#include "ir/ops/ShapeUtil.h"

#include <cmath>

namespace dtnn::ir {

namespace {

// Checks the floating-point input of activation `op`; false after ctx.fail.
bool checkFloatInput(InferCtx &ctx, const std::string &op) {
  const TensorType &x = ctx.operands[0];
  if (!isFloatType(x.dtype))
    return ctx.fail(op + " expects a floating-point input, got " + x.str(), {0});
  return true;
}

// The shape rule of an attribute-free activation: the result has x's type.
ShapeFn floatUnary(std::string op) {
  return [op = std::move(op)](InferCtx &ctx) {
    return checkFloatInput(ctx, op) && sameAsFirstOperand(ctx);
  };
}

// An elementwise activation with one operand x and no attributes.
OpDef unaryOp(std::string name, std::string summary) {
  ShapeFn rule = floatUnary(name);
  return {
      .name = std::move(name),
      .summary = std::move(summary),
      .operands = {{"x"}},
      .attrs = {},
      .fusion = FusionClass::Elementwise,
      .inferShape = std::move(rule),
      .macs = nullptr,
      .layer = std::nullopt,
  };
}

// Operand: x; `alpha` is the slope for negative inputs and must be finite.
bool inferLeakyRelu(InferCtx &ctx) {
  if (!checkFloatInput(ctx, "leaky_relu")) return false;
  if (!std::isfinite(ctx.attrs.getFloat("alpha")))
    return ctx.fail("leaky_relu alpha must be a finite number");
  return sameAsFirstOperand(ctx);
}

// Operand: x; `approximate` is "none" (the erf form) or "tanh".
bool inferGelu(InferCtx &ctx) {
  if (!checkFloatInput(ctx, "gelu")) return false;
  const std::string &approx = ctx.attrs.getString("approximate");
  if (approx != "none" && approx != "tanh")
    return ctx.fail("gelu approximate must be \"none\" or \"tanh\", got \"" + approx + "\"");
  return sameAsFirstOperand(ctx);
}

// The shape rule of softmax and log_softmax: x of rank >= 1 and an axis in range.
ShapeFn softmaxRule(std::string op) {
  return [op = std::move(op)](InferCtx &ctx) {
    if (!checkFloatInput(ctx, op)) return false;
    const TensorType &x = ctx.operands[0];
    int64_t axis = ctx.attrs.getInt("axis");
    if (!normalizeAxis(axis, x.rank()))
      return ctx.fail(op + " axis " + std::to_string(axis) + " is out of range for " + x.str(),
                      {0});
    return sameAsFirstOperand(ctx);
  };
}

} // namespace

void registerActivationOps(OpTable &t) {
  t.add(unaryOp("relu", "Rectified linear unit, max(x, 0)."));
  t.add(unaryOp("relu6", "Rectified linear unit clipped to [0, 6]."));
  t.add({
      .name = "leaky_relu",
      .summary = "Leaky rectified linear unit: x for x > 0, alpha * x otherwise.",
      .operands = {{"x"}},
      .attrs = {{"alpha", AttrKind::Float, AttrValue(0.01)}},
      .fusion = FusionClass::Elementwise,
      .inferShape = inferLeakyRelu,
      .macs = nullptr,
      .layer = std::nullopt,
  });
  t.add(unaryOp("sigmoid", "Logistic sigmoid, 1 / (1 + exp(-x))."));
  t.add(unaryOp("tanh", "Hyperbolic tangent."));
  t.add(unaryOp("silu", "Sigmoid linear unit (swish), x * sigmoid(x)."));
  t.add({
      .name = "gelu",
      .summary = "Gaussian error linear unit, exact (erf) or with the tanh approximation.",
      .operands = {{"x"}},
      .attrs = {{"approximate", AttrKind::String, AttrValue(std::string("none"))}},
      .fusion = FusionClass::Elementwise,
      .inferShape = inferGelu,
      .macs = nullptr,
      .layer = std::nullopt,
  });
  t.add(unaryOp("hard_sigmoid", "Piecewise-linear sigmoid, relu6(x + 3) / 6."));
  t.add(unaryOp("hard_swish", "Piecewise-linear swish, x * relu6(x + 3) / 6."));
  t.add({
      .name = "softmax",
      .summary = "Softmax along axis: exp(x) divided by its sum over that axis.",
      .operands = {{"x"}},
      .attrs = {{"axis", AttrKind::Int, AttrValue(int64_t{-1})}},
      .fusion = FusionClass::Reduce,
      .inferShape = softmaxRule("softmax"),
      .macs = nullptr,
      .layer = std::nullopt,
  });
  t.add({
      .name = "log_softmax",
      .summary = "Logarithm of the softmax along axis, computed stably.",
      .operands = {{"x"}},
      .attrs = {{"axis", AttrKind::Int, AttrValue(int64_t{-1})}},
      .fusion = FusionClass::Reduce,
      .inferShape = softmaxRule("log_softmax"),
      .macs = nullptr,
      .layer = std::nullopt,
  });
}

} // namespace dtnn::ir
