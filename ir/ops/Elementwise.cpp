// Binary arithmetic with numpy broadcasting (add, sub, mul, div), and
// the generic helpers that gradient rules of every family build on: fill,
// scale, sum_like (the reverse of broadcasting) and broadcast_like. A `?` dimension
// broadcasts against `?` or 1 only.
#include "ir/Builder.h"
#include "ir/OpTable.h"
#include "ir/ops/FusedActivation.h"
#include "ir/ops/ShapeUtil.h"

#include <cmath>

namespace dtnn::ir {

namespace {

// The shape rule shared by the binary ops; `op` names the op in messages.
// Operands: a and b of one dtype with broadcast-compatible shapes.
ShapeFn broadcastBinary(std::string op) {
  return [op = std::move(op)](InferCtx &ctx) {
    const TensorType &a = ctx.operands[0];
    const TensorType &b = ctx.operands[1];
    if (a.dtype != b.dtype)
      return ctx.fail(op + " operands must have the same element type, got " + a.str() + " and " +
                          b.str(),
                      {0, 1});
    auto dims = broadcastDims(a.dims, b.dims);
    if (!dims) return ctx.fail(op + " cannot broadcast " + a.str() + " with " + b.str(), {0, 1});
    if (Error e = checkFusedActivation(ctx, op, a.dtype)) return e;
    ctx.results = {TensorType(a.dtype, std::move(*dims))};
    return Error::success();
  };
}

// True when `small` broadcasts to exactly `big` (numpy rules, `?` only
// against `?` or 1).
bool broadcastsTo(const TensorType &small, const TensorType &big) {
  if (small.rank() > big.rank()) return false;
  auto dims = broadcastDims(big.dims, small.dims);
  return dims && *dims == big.dims;
}

// Operands: x and like of one dtype, like broadcastable to x. The result has
// like's type: x summed over the dimensions that broadcasting added.
Error inferSumLike(InferCtx &ctx) {
  const TensorType &x = ctx.operands[0];
  const TensorType &like = ctx.operands[1];
  if (x.dtype != like.dtype || !broadcastsTo(like, x))
    return ctx.fail("sum_like cannot reduce " + x.str() + " to " + like.str() +
                        " (the target must broadcast to the input)",
                    {0, 1});
  ctx.results = {like};
  return Error::success();
}

// Operands: x and like of one dtype, x broadcastable to like. The result has
// like's type.
Error inferBroadcastLike(InferCtx &ctx) {
  const TensorType &x = ctx.operands[0];
  const TensorType &like = ctx.operands[1];
  if (x.dtype != like.dtype || !broadcastsTo(x, like))
    return ctx.fail("broadcast_like cannot broadcast " + x.str() + " to " + like.str(), {0, 1});
  ctx.results = {like};
  return Error::success();
}

// True when v is an integer in [lo, hi).
bool integerIn(double v, double lo, double hi) { return v >= lo && v < hi && std::trunc(v) == v; }

// True when element type t holds v exactly; floating-point types take any
// value (rounded, as the kernel casts it).
bool representable(double v, DType t) {
  switch (t) {
  case DType::F32:
  case DType::BF16:
  case DType::F64: return true;
  case DType::I32: return integerIn(v, -0x1p31, 0x1p31);
  case DType::I64: return integerIn(v, -0x1p63, 0x1p63);
  case DType::U8: return integerIn(v, 0, 256);
  case DType::Bool: return v == 0 || v == 1;
  case DType::Token: return false;
  }
  return false;
}

// Operand: like, of any type; the result has its type. For an integer or
// bool type, value must be a number that the type holds exactly.
Error inferFill(InferCtx &ctx) {
  DType t = ctx.operands[0].dtype;
  double v = ctx.attrs.getFloat("value");
  if (!representable(v, t))
    return ctx.fail("fill value " + formatDouble(v) + " is not representable in " +
                    std::string(dtypeName(t)));
  return sameAsFirstOperand(ctx);
}

// Operand: x, floating point; the result has its type.
Error inferScale(InferCtx &ctx) {
  if (!isFloatType(ctx.operands[0].dtype))
    return ctx.fail("scale expects a floating-point input, got " + ctx.operands[0].str(), {0});
  return sameAsFirstOperand(ctx);
}

// Operands: x and like, like broadcastable to x (their contents unused). The
// result has like's type.
Error inferCountLike(InferCtx &ctx) {
  const TensorType &x = ctx.operands[0];
  const TensorType &like = ctx.operands[1];
  if (!isFloatType(like.dtype) || !broadcastsTo(like, x))
    return ctx.fail("count_like needs a floating-point like that broadcasts to x, got " +
                        like.str() + " and " + x.str(),
                    {0, 1});
  if (!std::isfinite(ctx.attrs.getFloat("offset")))
    return ctx.fail("count_like offset must be a finite number");
  ctx.results = {like};
  return Error::success();
}

// Fails the rule with the builder's error when v is null.
Error check(GradCtx &ctx, Value *v) { return v ? Error::success() : ctx.b.takeError(); }

// d(a + b) = dy, d(a - b) = (dy, -dy), each reduced to its operand's type;
// add's dy goes back through its fused activation first.
GradFn addSubGrad(double signB) {
  return [signB](GradCtx &ctx) {
    if (!ctx.dy[0]) return Error::success();
    Value *dy = preActivationGradient(ctx, ctx.dy[0]);
    if (Error e = check(ctx, dy)) return e;
    Value *a = ctx.op.operand(0), *b = ctx.op.operand(1);
    if (ctx.needed[0])
      if (Error e = check(ctx, ctx.dx[0] = reduceTo(ctx.b, dy, a))) return e;
    if (ctx.needed[1]) {
      Value *g = reduceTo(ctx.b, dy, b);
      if (g && signB != 1) g = ctx.b.create1("scale", {g}, attrs({{"factor", signB}}));
      if (Error e = check(ctx, ctx.dx[1] = g)) return e;
    }
    return Error::success();
  };
}

// d(a * b) = (dy * b, dy * a), each reduced to its operand's type.
Error mulGrad(GradCtx &ctx) {
  Value *dy = ctx.dy[0];
  if (!dy) return Error::success();
  Value *a = ctx.op.operand(0), *b = ctx.op.operand(1);
  for (int i = 0; i < 2; ++i) {
    if (!ctx.needed[i]) continue;
    Value *prod = ctx.b.create1("mul", {dy, i == 0 ? b : a});
    if (Error e = check(ctx, prod)) return e;
    if (Error e = check(ctx, ctx.dx[i] = reduceTo(ctx.b, prod, i == 0 ? a : b))) return e;
  }
  return Error::success();
}

// d(a / b) = (dy / b, -(dy / b) * y) with y = a / b, each reduced to its
// operand's type.
Error divGrad(GradCtx &ctx) {
  Value *dy = ctx.dy[0];
  if (!dy) return Error::success();
  Value *a = ctx.op.operand(0), *b = ctx.op.operand(1);
  Value *q = ctx.b.create1("div", {dy, b});
  if (Error e = check(ctx, q)) return e;
  if (ctx.needed[0])
    if (Error e = check(ctx, ctx.dx[0] = reduceTo(ctx.b, q, a))) return e;
  if (ctx.needed[1]) {
    Value *g = ctx.b.create1("mul", {q, ctx.op.result(0)});
    if (g) g = ctx.b.create1("scale", {g}, attrs({{"factor", -1.0}}));
    if (g) g = reduceTo(ctx.b, g, b);
    if (Error e = check(ctx, ctx.dx[1] = g)) return e;
  }
  return Error::success();
}

// fill's result does not depend on its operand's values: no gradient.
Error noGrad(GradCtx &) { return Error::success(); }

// d scale(x, f) = scale(dy, f).
Error scaleGrad(GradCtx &ctx) {
  if (!ctx.dy[0] || !ctx.needed[0]) return Error::success();
  ctx.dx[0] = ctx.b.create1("scale", {ctx.dy[0]}, ctx.op.attrs());
  return check(ctx, ctx.dx[0]);
}

// A binary arithmetic op with broadcasting; `attrs`: add's fused activation.
OpDef binaryOp(std::string name, std::string summary, GradFn grad,
               std::vector<AttrSpec> attrs = {}) {
  ShapeFn rule = broadcastBinary(name);
  return {
      .name = std::move(name),
      .summary = std::move(summary),
      .operands = {reusable("a"), reusable("b")},
      .attrs = std::move(attrs),
      .fusion = FusionClass::Broadcast,
      .inferShape = std::move(rule),
      .macs = nullptr,
      .layer = std::nullopt,
      .grad = std::move(grad),
      .trainForm = "",
      .precision = Precision::Follow,
  };
}

} // namespace

void registerElementwiseOps(BuiltinOps &t) {
  t.add(binaryOp("add", "Elementwise sum a + b with numpy broadcasting.", addSubGrad(1),
                 {fusedActivationAttr()}));
  t.add(binaryOp("sub", "Elementwise difference a - b with numpy broadcasting.", addSubGrad(-1)));
  t.add(binaryOp("mul", "Elementwise product a * b with numpy broadcasting.", mulGrad));
  t.add(binaryOp("div", "Elementwise quotient a / b with numpy broadcasting.", divGrad));
  t.add({
      .name = "fill",
      .summary = "A tensor of like's type with every element set to value.",
      .operands = {shapeOnly("like")},
      .attrs = {{"value", AttrKind::Float, AttrValue(0.0)}},
      .fusion = FusionClass::Elementwise,
      .inferShape = inferFill,
      .macs = nullptr,
      .layer = std::nullopt,
      .grad = noGrad,
      .trainForm = "",
      .role = OpRole::Forward,
      .internal = true,
      .precision = Precision::Follow,
  });
  t.add({
      .name = "scale",
      .summary = "Multiplies every element of a floating-point tensor by factor.",
      .operands = {reusable("x")},
      .attrs = {{"factor", AttrKind::Float, AttrValue(1.0)}},
      .fusion = FusionClass::Elementwise,
      .inferShape = inferScale,
      .macs = nullptr,
      .layer = std::nullopt,
      .grad = scaleGrad,
      .trainForm = "",
      .precision = Precision::Follow,
  });
  // The divisor of a mean over the dimensions sum_like reduces, known only
  // when the batch size is: decompose-batchnorm divides its sums by it.
  t.add({
      .name = "count_like",
      .summary = "A tensor of like's type holding numel(x) / numel(like) + offset, at least 1: "
                 "how many elements sum_like adds into each.",
      .operands = {shapeOnly("x"), shapeOnly("like")},
      .attrs = {{"offset", AttrKind::Float, AttrValue(0.0)}},
      .fusion = FusionClass::Opaque,
      .inferShape = inferCountLike,
      .macs = nullptr,
      .layer = std::nullopt,
      .grad = noGrad,
      .trainForm = "",
      .role = OpRole::Forward,
      .internal = true,
      .precision = Precision::Follow,
  });
  t.add({
      .name = "sum_like",
      .summary = "Sums x over the dimensions broadcasting added, down to like's type.",
      .operands = {{"x"}, shapeOnly("like")},
      .attrs = {},
      .fusion = FusionClass::Reduce,
      .inferShape = inferSumLike,
      .macs = nullptr,
      .layer = std::nullopt,
      .grad = adjointGrad("broadcast_like"),
      .trainForm = "",
      .role = OpRole::Backward,
      .internal = true,
      .precision = Precision::Float,
  });
  t.add({
      .name = "broadcast_like",
      .summary = "Broadcasts x to like's type with numpy rules, as x.expand_as(like).",
      .operands = {{"x"}, shapeOnly("like")},
      .attrs = {},
      .fusion = FusionClass::Broadcast,
      .inferShape = inferBroadcastLike,
      .macs = nullptr,
      .layer = std::nullopt,
      .grad = adjointGrad("sum_like"),
      .trainForm = "",
      .precision = Precision::Follow,
  });
}

} // namespace dtnn::ir
