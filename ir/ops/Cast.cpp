// cast: converts a tensor between floating-point element types, as
// x.to(torch.bfloat16). Narrowing to bf16 rounds to nearest, ties to even;
// widening is exact. The mixed-precision pass places casts where a producer
// and a consumer compute in different types; fuse-elementwise puts them into
// the kernels around them, which then load or store the narrow type.
#include "ir/Builder.h"
#include "ir/OpTable.h"
#include "ir/ops/ShapeUtil.h"

namespace dtnn::ir {

namespace {

// Operand x of a floating-point type; attribute `to`, the name of one.
Error inferCast(InferCtx &ctx) {
  const TensorType &x = ctx.operands[0];
  std::string to = ctx.attrs.getString("to");
  std::optional<DType> t = parseDType(to);
  if (!t || !isFloatType(*t))
    return ctx.fail("cast to must name a floating-point type (f32, bf16, f64), got '" + to + "'");
  if (!isFloatType(x.dtype))
    return ctx.fail("cast expects a floating-point input, got " + x.str(), {0});
  ctx.results = {TensorType(*t, x.dims)};
  return Error::success();
}

// The gradient goes back to x's type: dx = cast(dy, to = x's type).
Error castGrad(GradCtx &ctx) {
  if (!ctx.dy[0] || !ctx.needed[0]) return Error::success();
  ctx.dx[0] = castTo(ctx.b, ctx.dy[0], ctx.op.operand(0)->type().dtype);
  return ctx.dx[0] ? Error::success() : ctx.b.takeError();
}

} // namespace

Value *castTo(Builder &b, Value *v, DType t) {
  if (v->type().dtype == t) return v;
  return b.create1("cast", {v}, attrs({{"to", std::string(dtypeName(t))}}));
}

void registerCastOps(BuiltinOps &t) {
  t.add({
      .name = "cast",
      .summary = "Converts x to the floating-point type `to` (bf16 rounds to nearest even).",
      .operands = {{"x"}},
      .attrs = {{"to", AttrKind::String, std::nullopt}},
      .fusion = FusionClass::Elementwise,
      .inferShape = inferCast,
      .macs = nullptr,
      .layer = std::nullopt,
      .grad = castGrad,
      .trainForm = "",
      .role = OpRole::Forward,
      .precision = Precision::Follow,
  });
}

} // namespace dtnn::ir
