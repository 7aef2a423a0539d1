// Elementwise math on floating-point tensors: sqrt, rsqrt, exp, log, erf and
// pow by a constant exponent, as torch.sqrt, torch.rsqrt, torch.exp,
// torch.log, torch.erf and torch.pow(x, p). The language's sqrt, exp, log,
// pow, rsqrt and erf builtins make them when given a tensor. Each gradient is
// built from these ops and the binary ones, so that fuse-elementwise puts it
// in one kernel with what surrounds it.
#include "ir/Builder.h"
#include "ir/OpTable.h"
#include "ir/ops/ShapeUtil.h"

#include <cmath>

namespace dtnn::ir {

namespace {

// The shape rule of a unary math op `name`: x of a floating-point type, and
// the float attribute `finite`, if named, a finite number.
ShapeFn unaryFloat(std::string name, std::string finite = "") {
  return [name = std::move(name), finite = std::move(finite)](InferCtx &ctx) {
    if (!isFloatType(ctx.operands[0].dtype))
      return ctx.fail(name + " expects a floating-point input, got " + ctx.operands[0].str(), {0});
    if (!finite.empty() && !std::isfinite(ctx.attrs.getFloat(finite)))
      return ctx.fail(name + " " + finite + " must be a finite number");
    return sameAsFirstOperand(ctx);
  };
}

Error inferRsqrt(InferCtx &ctx) {
  if (Error e = unaryFloat("rsqrt", "eps")(ctx)) return e;
  if (!(ctx.attrs.getFloat("eps") >= 0)) return ctx.fail("rsqrt eps must be a number >= 0");
  return Error::success();
}

// dx = dy * slope, when the gradient is wanted; `slope` builds the local
// derivative from the op's operand and result.
GradFn chainRule(std::function<Value *(Builder &, const Op &)> slope) {
  return [slope = std::move(slope)](GradCtx &ctx) {
    if (!ctx.dy[0] || !ctx.needed[0]) return Error::success();
    Value *s = slope(ctx.b, ctx.op);
    ctx.dx[0] = s ? ctx.b.create1("mul", {ctx.dy[0], s}) : nullptr;
    return ctx.dx[0] ? Error::success() : ctx.b.takeError();
  };
}

Value *scaled(Builder &b, Value *v, double factor) {
  return v ? b.create1("scale", {v}, attrs({{"factor", factor}})) : nullptr;
}

// y = sqrt(x), so dx = dy / (2 y).
Error sqrtGrad(GradCtx &ctx) {
  if (!ctx.dy[0] || !ctx.needed[0]) return Error::success();
  Value *half = scaled(ctx.b, ctx.dy[0], 0.5);
  ctx.dx[0] = half ? ctx.b.create1("div", {half, ctx.op.result(0)}) : nullptr;
  return ctx.dx[0] ? Error::success() : ctx.b.takeError();
}

// y = log(x), so dx = dy / x.
Error logGrad(GradCtx &ctx) {
  if (!ctx.dy[0] || !ctx.needed[0]) return Error::success();
  ctx.dx[0] = ctx.b.create1("div", {ctx.dy[0], ctx.op.operand(0)});
  return ctx.dx[0] ? Error::success() : ctx.b.takeError();
}

OpDef unaryOp(std::string name, std::string summary, ShapeFn infer, GradFn grad,
              std::vector<AttrSpec> attrSpecs = {}) {
  return OpDef{
      .name = std::move(name),
      .summary = std::move(summary),
      .operands = {reusable("x")},
      .attrs = std::move(attrSpecs),
      .fusion = FusionClass::Elementwise,
      .inferShape = std::move(infer),
      .macs = nullptr,
      .layer = std::nullopt,
      .grad = std::move(grad),
      .trainForm = "",
      .role = OpRole::Forward,
      .precision = Precision::Follow,
  };
}

} // namespace

void registerMathOps(BuiltinOps &t) {
  t.add(unaryOp("sqrt", "Elementwise square root.", unaryFloat("sqrt"), sqrtGrad));
  // y = (x + eps)^(-1/2), so dx = dy * -y^3 / 2.
  t.add(unaryOp("rsqrt", "Elementwise 1 / sqrt(x + eps).", inferRsqrt,
                chainRule([](Builder &b, const Op &op) {
                  Value *y = op.result(0);
                  return scaled(b, b.create1("mul", {y, b.create1("mul", {y, y})}), -0.5);
                }),
                {{"eps", AttrKind::Float, AttrValue(0.0)}}));
  // y = e^x, so dx = dy * y.
  t.add(unaryOp("exp", "Elementwise e^x.", unaryFloat("exp"),
                chainRule([](Builder &, const Op &op) { return op.result(0); })));
  t.add(unaryOp("log", "Elementwise natural logarithm.", unaryFloat("log"), logGrad));
  // y = erf(x), so dx = dy * 2/sqrt(pi) * e^(-x^2).
  t.add(unaryOp("erf", "Elementwise error function.", unaryFloat("erf"),
                chainRule([](Builder &b, const Op &op) {
                  Value *x = op.operand(0);
                  Value *bell = b.create1("exp", {scaled(b, b.create1("mul", {x, x}), -1.0)});
                  return scaled(b, bell, 2 / std::sqrt(M_PI));
                })));
  // y = x^p, so dx = dy * p * x^(p-1).
  t.add(unaryOp("pow", "Elementwise x to the power exponent (a constant).",
                unaryFloat("pow", "exponent"), chainRule([](Builder &b, const Op &op) {
                  double p = op.attrs().getFloat("exponent");
                  Value *lower = b.create1("pow", {op.operand(0)}, attrs({{"exponent", p - 1}}));
                  return scaled(b, lower, p);
                }),
                {{"exponent", AttrKind::Float, AttrValue(1.0)}}));
}

} // namespace dtnn::ir
