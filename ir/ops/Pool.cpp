// Pooling over [N,C,H,W]: maxpool and avgpool with a sliding window (PyTorch's
// ceil_mode rule for the output size), global_avgpool, and their backward ops.
#include "ir/Builder.h"
#include "ir/OpTable.h"
#include "ir/ops/ShapeUtil.h"

namespace dtnn::ir {

namespace {

// Shared by maxpool and avgpool. Operand: x [N,C,H,W]. An empty `stride`
// means a stride equal to the kernel.
Error inferWindowPool(InferCtx &ctx, const std::string &op) {
  const TensorType &x = ctx.operands[0];
  if (x.rank() != 4) return ctx.fail(op + " expects a 4-d input [N,C,H,W], got " + x.str(), {0});
  auto kernel = expandInts(ctx.attrs.getInts("kernel"), 2);
  if (!kernel || (*kernel)[0] < 1 || (*kernel)[1] < 1)
    return ctx.fail(op + " kernel must be 1 or 2 positive integers");
  const std::vector<int64_t> &strideAttr = ctx.attrs.getInts("stride");
  auto stride = strideAttr.empty() ? kernel : expandInts(strideAttr, 2);
  if (!stride || (*stride)[0] < 1 || (*stride)[1] < 1)
    return ctx.fail(op + " stride must be empty (the kernel) or 1 or 2 positive integers");
  auto pad = expandPad(ctx.attrs.getInts("pad"));
  if (!pad || (*pad)[0] < 0 || (*pad)[1] < 0 || (*pad)[2] < 0 || (*pad)[3] < 0)
    return ctx.fail(op + " pad must be 1, 2 or 4 non-negative integers");
  int64_t kh = (*kernel)[0], kw = (*kernel)[1];
  if ((*pad)[0] > kh / 2 || (*pad)[2] > kh / 2 || (*pad)[1] > kw / 2 || (*pad)[3] > kw / 2)
    return ctx.fail(op + " pad must be at most half the kernel size " + std::to_string(kh) + "x" +
                    std::to_string(kw));
  bool ceil = ctx.attrs.getBool("ceil");
  if (isBatchDim(x.dims[2]) || isBatchDim(x.dims[3]))
    return ctx.fail(op + " needs static spatial dimensions, got " + x.str(), {0});
  int64_t oh = windowOutDim(x.dims[2], kh, (*stride)[0], (*pad)[0], (*pad)[2], 1, ceil);
  int64_t ow = windowOutDim(x.dims[3], kw, (*stride)[1], (*pad)[1], (*pad)[3], 1, ceil);
  if (oh < 1 || ow < 1)
    return ctx.fail(op + " kernel " + std::to_string(kh) + "x" + std::to_string(kw) +
                        " does not fit the padded input " + x.str(),
                    {0});
  ctx.results = {TensorType(x.dtype, {x.dims[0], x.dims[1], oh, ow})};
  return Error::success();
}

Error inferMaxPool(InferCtx &ctx) {
  const TensorType &x = ctx.operands[0];
  if (!isFloatType(x.dtype))
    return ctx.fail("maxpool expects a floating-point input, got " + x.str(), {0});
  return inferWindowPool(ctx, "maxpool");
}

Error inferAvgPool(InferCtx &ctx) {
  const TensorType &x = ctx.operands[0];
  if (!isFloatType(x.dtype))
    return ctx.fail("avgpool expects a floating-point input, got " + x.str(), {0});
  return inferWindowPool(ctx, "avgpool");
}

// Operand: x [N,C,H,W] with H*W > 0; the result is [N,C,1,1].
Error inferGlobalAvgPool(InferCtx &ctx) {
  const TensorType &x = ctx.operands[0];
  if (x.rank() != 4)
    return ctx.fail("global_avgpool expects a 4-d input [N,C,H,W], got " + x.str(), {0});
  if (!isFloatType(x.dtype))
    return ctx.fail("global_avgpool expects a floating-point input, got " + x.str(), {0});
  if (x.dims[2] == 0 || x.dims[3] == 0)
    return ctx.fail("global_avgpool cannot average an empty plane (H*W = 0), got " + x.str(), {0});
  ctx.results = {TensorType(x.dtype, {x.dims[0], x.dims[1], 1, 1})};
  return Error::success();
}

// Shared by the pooling gradients: operands dy and x (the shape donor). Runs
// the forward shape rule `forward` on x, checks that dy has the type of its
// result, and gives the result x's type.
Error inferPoolGradient(InferCtx &ctx, const std::string &op, const ShapeFn &forward) {
  const TensorType &dy = ctx.operands[0], &x = ctx.operands[1];
  if (!isFloatType(x.dtype))
    return ctx.fail(op + " expects a floating-point input, got " + x.str(), {1});
  std::vector<TensorType> in = {x};
  InferCtx sub{in, ctx.attrs, {}, {}};
  if (Error e = forward(sub)) {
    std::vector<int> blame;
    if (!sub.blame.empty()) blame.push_back(1);
    return ctx.fail(op + ": " + e.message(), blame);
  }
  const TensorType &y = sub.results[0];
  if (!typesAgree(dy, y))
    return ctx.fail(op + " gradient " + dy.str() + " does not match the pooled result " + y.str(),
                    {0});
  ctx.results = {x};
  return Error::success();
}

// Operands of the pooling gradients: dy, then x (the shape donor).
Error inferMaxPoolBackward(InferCtx &ctx) {
  return inferPoolGradient(ctx, "maxpool_backward", inferMaxPool);
}

Error inferAvgPoolBackward(InferCtx &ctx) {
  return inferPoolGradient(ctx, "avgpool_backward", inferAvgPool);
}

Error inferGlobalAvgPoolBackward(InferCtx &ctx) {
  return inferPoolGradient(ctx, "global_avgpool_backward", inferGlobalAvgPool);
}

// The gradient of a pooling op: `<op>_backward %dy, %x` with the op's attributes.
GradFn poolGrad(std::string backwardOp) {
  return [backwardOp](GradCtx &ctx) {
    Value *dy = ctx.dy[0];
    if (!dy || !ctx.needed[0]) return Error::success();
    ctx.dx[0] = ctx.b.create1(backwardOp, {dy, ctx.op.operand(0)}, ctx.op.attrs());
    if (!ctx.dx[0]) return ctx.b.takeError();
    return Error::success();
  };
}

// pool(kernel, stride=0, pad=0, ceil=false): ints expand to both axes (pad as
// in conv2d) and a zero stride entry means the kernel size along that axis.
Error buildWindowPool(LayerCtx &ctx, const std::string &op) {
  const TensorType &x = ctx.inputs[0];
  if (x.rank() != 4) return ctx.fail(op + " expects a 4-d input [N,C,H,W], got " + x.str());
  auto kernel = expandInts(ctx.args.getInts("kernel"), 2);
  if (!kernel || (*kernel)[0] < 1 || (*kernel)[1] < 1)
    return ctx.fail(op + " kernel must be 1 or 2 positive integers", "kernel");
  auto stride = expandInts(ctx.args.getInts("stride"), 2);
  if (!stride || (*stride)[0] < 0 || (*stride)[1] < 0)
    return ctx.fail(op + " stride must be 1 or 2 non-negative integers (0: the kernel size)",
                    "stride");
  for (size_t i = 0; i < 2; ++i)
    if ((*stride)[i] == 0) (*stride)[i] = (*kernel)[i];
  auto pad = expandPad(ctx.args.getInts("pad"));
  if (!pad || (*pad)[0] < 0 || (*pad)[1] < 0 || (*pad)[2] < 0 || (*pad)[3] < 0)
    return ctx.fail(op + " pad must be 1, 2 or 4 non-negative integers", "pad");
  ctx.attrs.set("kernel", *kernel);
  ctx.attrs.set("stride", *stride);
  ctx.attrs.set("pad", *pad);
  ctx.attrs.set("ceil", ctx.args.getBool("ceil"));
  return Error::success();
}

Error buildMaxPool(LayerCtx &ctx) { return buildWindowPool(ctx, "maxpool"); }

Error buildAvgPool(LayerCtx &ctx) {
  if (Error e = buildWindowPool(ctx, "avgpool")) return e;
  ctx.attrs.set("count_pad", ctx.args.getBool("count_pad"));
  return Error::success();
}

// The IR attributes common to maxpool and avgpool.
std::vector<AttrSpec> windowPoolAttrs() {
  return {{"kernel", AttrKind::Ints, std::nullopt},
          {"stride", AttrKind::Ints, AttrValue(std::vector<int64_t>{})},
          {"pad", AttrKind::Ints, AttrValue(std::vector<int64_t>{0, 0, 0, 0})},
          {"ceil", AttrKind::Bool, AttrValue(false)}};
}

// The language arguments common to maxpool and avgpool.
std::vector<AttrSpec> windowPoolArgs() {
  return {{"kernel", AttrKind::Ints, std::nullopt},
          {"stride", AttrKind::Ints, AttrValue(std::vector<int64_t>{0})},
          {"pad", AttrKind::Ints, AttrValue(std::vector<int64_t>{0})},
          {"ceil", AttrKind::Bool, AttrValue(false)}};
}

// `base` with `extra` appended.
std::vector<AttrSpec> withSpec(std::vector<AttrSpec> base, AttrSpec extra) {
  base.push_back(std::move(extra));
  return base;
}

} // namespace

void registerPoolOps(BuiltinOps &t) {
  t.add({
      .name = "maxpool",
      .summary = "2-d max pooling over [N,C,H,W] with a sliding window.",
      .operands = {{"x"}},
      .attrs = windowPoolAttrs(),
      .fusion = FusionClass::Opaque,
      .inferShape = inferMaxPool,
      .macs = nullptr,
      .layer = LayerSpec{1, windowPoolArgs(), buildMaxPool},
      .grad = poolGrad("maxpool_backward"),
      .trainForm = "",
      .precision = Precision::Follow,
  });
  t.add({
      .name = "avgpool",
      .summary = "2-d average pooling over [N,C,H,W]; count_pad counts padding in the divisor.",
      .operands = {{"x"}},
      .attrs = withSpec(windowPoolAttrs(), {"count_pad", AttrKind::Bool, AttrValue(true)}),
      .fusion = FusionClass::Opaque,
      .inferShape = inferAvgPool,
      .macs = nullptr,
      .layer =
          LayerSpec{1, withSpec(windowPoolArgs(), {"count_pad", AttrKind::Bool, AttrValue(true)}),
                    buildAvgPool},
      .grad = poolGrad("avgpool_backward"),
      .trainForm = "",
      .precision = Precision::Follow,
  });
  t.add({
      .name = "global_avgpool",
      .summary = "Averages each channel of [N,C,H,W] over its whole plane, giving [N,C,1,1].",
      .operands = {{"x"}},
      .attrs = {},
      .fusion = FusionClass::Reduce,
      .inferShape = inferGlobalAvgPool,
      .macs = nullptr,
      .layer = std::nullopt,
      .grad = poolGrad("global_avgpool_backward"),
      .trainForm = "",
      .precision = Precision::Follow,
  });
  t.add({
      .name = "maxpool_backward",
      .summary = "Gradient of maxpool: routes each dy element to the first maximum of its "
                 "window in x.",
      .operands = {{"dy"}, {"x"}},
      .attrs = windowPoolAttrs(),
      .fusion = FusionClass::Opaque,
      .inferShape = inferMaxPoolBackward,
      .macs = nullptr,
      .layer = std::nullopt,
      .grad = nullptr,
      .trainForm = "",
      .role = OpRole::Backward,
      .internal = true,
      .precision = Precision::Follow,
  });
  t.add({
      .name = "avgpool_backward",
      .summary = "Gradient of avgpool: spreads each dy element evenly over its window, with "
                 "the forward divisor.",
      .operands = {{"dy"}, shapeOnly("x")},
      .attrs = withSpec(windowPoolAttrs(), {"count_pad", AttrKind::Bool, AttrValue(true)}),
      .fusion = FusionClass::Opaque,
      .inferShape = inferAvgPoolBackward,
      .macs = nullptr,
      .layer = std::nullopt,
      .grad = nullptr,
      .trainForm = "",
      .role = OpRole::Backward,
      .internal = true,
      .precision = Precision::Follow,
  });
  t.add({
      .name = "global_avgpool_backward",
      .summary = "Gradient of global_avgpool: dy [N,C,1,1] divided by H*W and broadcast to "
                 "x's type.",
      .operands = {{"dy"}, shapeOnly("x")},
      .attrs = {},
      .fusion = FusionClass::Opaque,
      .inferShape = inferGlobalAvgPoolBackward,
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
