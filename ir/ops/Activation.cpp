// Activations: elementwise nonlinearities on floating-point tensors, the
// softmax family, which normalizes along one axis, and their backward ops.
// A backward op `<act>_backward %dy, %x` takes the forward input, except for
// sigmoid, tanh, softmax and log_softmax, whose backward ops take the forward
// result y (`%dy, %y`), from which their derivatives are cheaper.
#include "ir/Builder.h"
#include "ir/OpTable.h"
#include "ir/ops/ShapeUtil.h"

#include <cmath>

namespace dtnn::ir {

namespace {

// Checks the floating-point input of activation `op`.
Error checkFloatInput(InferCtx &ctx, const std::string &op) {
  const TensorType &x = ctx.operands[0];
  if (!isFloatType(x.dtype))
    return ctx.fail(op + " expects a floating-point input, got " + x.str(), {0});
  return Error::success();
}

// The shape rule of an attribute-free activation: the result has x's type.
ShapeFn floatUnary(std::string op) {
  return [op = std::move(op)](InferCtx &ctx) {
    if (Error e = checkFloatInput(ctx, op)) return e;
    return sameAsFirstOperand(ctx);
  };
}

// An elementwise activation with one operand x and no attributes.
OpDef unaryOp(std::string name, std::string summary) {
  ShapeFn rule = floatUnary(name);
  return {
      .name = std::move(name),
      .summary = std::move(summary),
      .operands = {reusable("x")},
      .attrs = {},
      .fusion = FusionClass::Elementwise,
      .inferShape = std::move(rule),
      .macs = nullptr,
      .layer = std::nullopt,
      .grad = nullptr,
      .trainForm = "",
      .precision = Precision::Follow,
  };
}

// Operand: x; `alpha` is the slope for negative inputs and must be finite.
Error inferLeakyRelu(InferCtx &ctx) {
  if (Error e = checkFloatInput(ctx, "leaky_relu")) return e;
  if (!std::isfinite(ctx.attrs.getFloat("alpha")))
    return ctx.fail("leaky_relu alpha must be a finite number");
  return sameAsFirstOperand(ctx);
}

// Operand: x; `approximate` is "none" (the erf form) or "tanh".
Error inferGelu(InferCtx &ctx) {
  if (Error e = checkFloatInput(ctx, "gelu")) return e;
  const std::string &approx = ctx.attrs.getString("approximate");
  if (approx != "none" && approx != "tanh")
    return ctx.fail("gelu approximate must be \"none\" or \"tanh\", got \"" + approx + "\"");
  return sameAsFirstOperand(ctx);
}

// The shape rule of softmax and log_softmax: x of rank >= 1 and an axis in range.
ShapeFn softmaxRule(std::string op) {
  return [op = std::move(op)](InferCtx &ctx) {
    if (Error e = checkFloatInput(ctx, op)) return e;
    const TensorType &x = ctx.operands[0];
    int64_t axis = ctx.attrs.getInt("axis");
    if (!normalizeAxis(axis, x.rank()))
      return ctx.fail(op + " axis " + std::to_string(axis) + " is out of range for " + x.str(),
                      {0});
    return sameAsFirstOperand(ctx);
  };
}

// The shape rule of a backward op: dy and the saved x (or y) of one
// floating-point type, which the result has. Attributes are checked by the
// forward op's rule, run on the saved operand.
ShapeFn backwardRule(std::string op, ShapeFn forward) {
  return [op = std::move(op), forward = std::move(forward)](InferCtx &ctx) {
    const TensorType &dy = ctx.operands[0];
    const TensorType &saved = ctx.operands[1];
    if (dy != saved)
      return ctx.fail(op + " gradient " + dy.str() + " does not match " + saved.str(), {0, 1});
    std::vector<TensorType> one = {saved};
    InferCtx inner{one, ctx.attrs, {}, {}};
    if (Error e = forward(inner)) return ctx.fail(op + ": " + e.message(), {1});
    ctx.results = {saved};
    return Error::success();
  };
}

// The gradient rule of activation `op`: dx = op_backward(dy, saved) with the
// forward attributes, where saved is the input x or, with useResult, y.
GradFn activationGrad(std::string op, bool useResult) {
  return [name = op + "_backward", useResult](GradCtx &ctx) {
    if (!ctx.dy[0] || !ctx.needed[0]) return Error::success();
    Value *saved = useResult ? ctx.op.result(0) : ctx.op.operand(0);
    ctx.dx[0] = ctx.b.create1(name, {ctx.dy[0], saved}, ctx.op.attrs());
    if (!ctx.dx[0]) return ctx.b.takeError();
    return Error::success();
  };
}

// Adds activation `def` with its grad rule and its backward op, which has
// the same attributes; `useResult` selects y over x as the saved operand.
void addWithBackward(BuiltinOps &t, bool useResult, OpDef def) {
  std::string name = def.name;
  std::string saved = useResult ? "y" : "x";
  OpDef back{
      .name = name + "_backward",
      .summary = "Gradient of " + name + " from the result gradient dy and the forward " +
                 (useResult ? "result y." : "input x."),
      .operands = {reusable("dy"), reusable(saved)},
      .attrs = def.attrs,
      .fusion = def.fusion,
      .inferShape = backwardRule(name + "_backward", def.inferShape),
      .macs = nullptr,
      .layer = std::nullopt,
      .grad = nullptr,
      .trainForm = "",
      .role = OpRole::Backward,
      .internal = true,
      .precision = def.precision,
  };
  def.grad = activationGrad(name, useResult);
  t.add(std::move(def));
  t.add(std::move(back));
}

} // namespace

void registerActivationOps(BuiltinOps &t) {
  addWithBackward(t, false, unaryOp("relu", "Rectified linear unit, max(x, 0)."));
  addWithBackward(t, false, unaryOp("relu6", "Rectified linear unit clipped to [0, 6]."));
  OpDef leakyRelu{
      .name = "leaky_relu",
      .summary = "Leaky rectified linear unit: x for x > 0, alpha * x otherwise.",
      .operands = {reusable("x")},
      .attrs = {{"alpha", AttrKind::Float, AttrValue(0.01)}},
      .fusion = FusionClass::Elementwise,
      .inferShape = inferLeakyRelu,
      .macs = nullptr,
      .layer = std::nullopt,
      .grad = nullptr,
      .trainForm = "",
      .precision = Precision::Follow,
  };
  addWithBackward(t, false, std::move(leakyRelu));
  addWithBackward(t, true, unaryOp("sigmoid", "Logistic sigmoid, 1 / (1 + exp(-x))."));
  addWithBackward(t, true, unaryOp("tanh", "Hyperbolic tangent."));
  addWithBackward(t, false, unaryOp("silu", "Sigmoid linear unit (swish), x * sigmoid(x)."));
  OpDef gelu{
      .name = "gelu",
      .summary = "Gaussian error linear unit, exact (erf) or with the tanh approximation.",
      .operands = {reusable("x")},
      .attrs = {{"approximate", AttrKind::String, AttrValue(std::string("none"))}},
      .fusion = FusionClass::Elementwise,
      .inferShape = inferGelu,
      .macs = nullptr,
      .layer = std::nullopt,
      .grad = nullptr,
      .trainForm = "",
      .precision = Precision::Follow,
  };
  addWithBackward(t, false, std::move(gelu));
  addWithBackward(t, false, unaryOp("hard_sigmoid", "Piecewise-linear sigmoid, relu6(x + 3) / 6."));
  addWithBackward(t, false, unaryOp("hard_swish", "Piecewise-linear swish, x * relu6(x + 3) / 6."));
  OpDef softmax{
      .name = "softmax",
      .summary = "Softmax along axis: exp(x) divided by its sum over that axis.",
      .operands = {reusable("x")},
      .attrs = {{"axis", AttrKind::Int, AttrValue(int64_t{-1})}},
      .fusion = FusionClass::Reduce,
      .inferShape = softmaxRule("softmax"),
      .macs = nullptr,
      .layer = std::nullopt,
      .grad = nullptr,
      .trainForm = "",
      .precision = Precision::Float,
  };
  addWithBackward(t, true, std::move(softmax));
  OpDef logSoftmax{
      .name = "log_softmax",
      .summary = "Logarithm of the softmax along axis, computed stably.",
      .operands = {reusable("x")},
      .attrs = {{"axis", AttrKind::Int, AttrValue(int64_t{-1})}},
      .fusion = FusionClass::Reduce,
      .inferShape = softmaxRule("log_softmax"),
      .macs = nullptr,
      .layer = std::nullopt,
      .grad = nullptr,
      .trainForm = "",
      .precision = Precision::Float,
  };
  addWithBackward(t, true, std::move(logSoftmax));
}

} // namespace dtnn::ir
