// Reductions over chosen axes, as torch.sum(x, dims, keepdim=True) and
// torch.amax(x, dims, keepdim=True): the reduced axes stay, of size 1, so that
// the result broadcasts back against x (the language's sum, max, mean and
// var drop them with a reshape when keepdim is false). reduce_sum's gradient
// broadcasts dy back; reduce_max's shares dy evenly among the elements equal
// to the maximum, as torch.amax's does.
#include "ir/Builder.h"
#include "ir/OpTable.h"
#include "ir/ops/ShapeUtil.h"

namespace dtnn::ir {

namespace {

// The type x reduced over `axes` by op `name`, or why not: the axes must be
// in range and strictly increasing, at least one.
Expected<TensorType> reducedType(const std::string &name, const TensorType &x,
                                 const std::vector<int64_t> &axes) {
  if (!isFloatType(x.dtype))
    return Error::make(name + " expects a floating-point input, got " + x.str());
  if (axes.empty()) return Error::make(name + " needs at least one axis");
  TensorType out = x;
  int64_t last = -1;
  for (int64_t a : axes) {
    if (a <= last || a >= int64_t(x.rank()))
      return Error::make(name + " axes must be increasing axes of " + x.str() + ", got " +
                         std::to_string(a));
    out.dims[size_t(a)] = 1;
    last = a;
  }
  return out;
}

ShapeFn inferReduce(std::string name) {
  return [name = std::move(name)](InferCtx &ctx) {
    Expected<TensorType> t = reducedType(name, ctx.operands[0], ctx.attrs.getInts("axes"));
    if (!t) return ctx.fail(t.error().message(), {0});
    ctx.results = {*t};
    return Error::success();
  };
}

// Operands dy (the reduced type), x and y = reduce_max(x); dx has x's type.
Error inferReduceMaxBackward(InferCtx &ctx) {
  Expected<TensorType> t =
      reducedType("reduce_max_backward", ctx.operands[1], ctx.attrs.getInts("axes"));
  if (!t) return ctx.fail(t.error().message(), {1});
  if (ctx.operands[0] != *t || ctx.operands[2] != *t)
    return ctx.fail("reduce_max_backward needs dy and y of type " + t->str() + ", got " +
                        ctx.operands[0].str() + " and " + ctx.operands[2].str(),
                    {0, 2});
  ctx.results = {ctx.operands[1]};
  return Error::success();
}

Error reduceMaxGrad(GradCtx &ctx) {
  if (!ctx.dy[0] || !ctx.needed[0]) return Error::success();
  ctx.dx[0] = ctx.b.create1("reduce_max_backward", {ctx.dy[0], ctx.op.operand(0), ctx.op.result(0)},
                            ctx.op.attrs());
  return ctx.dx[0] ? Error::success() : ctx.b.takeError();
}

AttrSpec axesAttr() { return {"axes", AttrKind::Ints, AttrValue(std::vector<int64_t>{})}; }

} // namespace

void registerReduceOps(BuiltinOps &t) {
  t.add({
      .name = "reduce_sum",
      .summary = "Sums x over axes (increasing), which stay as dimensions of size 1.",
      .operands = {{"x"}},
      .attrs = {axesAttr()},
      .fusion = FusionClass::Opaque,
      .inferShape = inferReduce("reduce_sum"),
      .macs = nullptr,
      .layer = std::nullopt,
      .grad = adjointGrad("broadcast_like"),
      .trainForm = "",
      .role = OpRole::Forward,
      .precision = Precision::Float,
  });
  t.add({
      .name = "reduce_max",
      .summary = "The largest element of x over axes (increasing), which stay as dimensions of "
                 "size 1; a NaN among them gives NaN.",
      .operands = {{"x"}},
      .attrs = {axesAttr()},
      .fusion = FusionClass::Opaque,
      .inferShape = inferReduce("reduce_max"),
      .macs = nullptr,
      .layer = std::nullopt,
      .grad = reduceMaxGrad,
      .trainForm = "",
      .role = OpRole::Forward,
      .precision = Precision::Follow,
  });
  t.add({
      .name = "reduce_max_backward",
      .summary = "The gradient of reduce_max: dy shared evenly among the elements of x equal to "
                 "their maximum y, 0 elsewhere.",
      .operands = {{"dy"}, {"x"}, {"y"}},
      .attrs = {axesAttr()},
      .fusion = FusionClass::Opaque,
      .inferShape = inferReduceMaxBackward,
      .macs = nullptr,
      .layer = std::nullopt,
      .grad = nullptr,
      .trainForm = "",
      .role = OpRole::Backward,
      .internal = true,
      .precision = Precision::Follow,
  });
}

} // namespace dtnn::ir
