// Convolution: conv2d, with stride, padding, dilation and groups (depthwise
// when groups equals the input channels), and its backward ops.
#include "ir/Builder.h"
#include "ir/InitSpec.h"
#include "ir/OpTable.h"
#include "ir/ops/FusedActivation.h"
#include "ir/ops/ShapeUtil.h"

namespace dtnn::ir {

namespace {

// Operands: x [N,C,H,W], weight [K, C/groups, KH, KW] (static, positive),
// optional bias [K], and with residual=true a last operand of the result's
// type.
Error inferConv2d(InferCtx &ctx) {
  const TensorType &x = ctx.operands[0];
  const TensorType &w = ctx.operands[1];
  if (x.rank() != 4)
    return ctx.fail("conv2d expects a 4-d input [N,C,H,W], got " + x.str(), {0});
  if (w.rank() != 4) return ctx.fail("conv2d weight must be 4-d, got " + w.str(), {1});
  if (!isFloatType(x.dtype))
    return ctx.fail("conv2d expects a floating-point input, got " + x.str(), {0});
  if (w.dtype != x.dtype)
    return ctx.fail("conv2d weight " + w.str() + " does not match the element type of input " +
                        x.str(),
                    {0, 1});
  for (int64_t d : w.dims)
    if (d < 1)
      return ctx.fail("conv2d weight must have static positive dimensions, got " + w.str(), {1});
  auto stride = expandInts(ctx.attrs.getInts("stride"), 2);
  auto pad = expandPad(ctx.attrs.getInts("pad"));
  auto dil = expandInts(ctx.attrs.getInts("dilation"), 2);
  int64_t groups = ctx.attrs.getInt("groups");
  if (!stride || (*stride)[0] < 1 || (*stride)[1] < 1)
    return ctx.fail("conv2d stride must be 1 or 2 positive integers");
  if (!pad || (*pad)[0] < 0 || (*pad)[1] < 0 || (*pad)[2] < 0 || (*pad)[3] < 0)
    return ctx.fail("conv2d pad must be 1, 2 or 4 non-negative integers");
  if (!dil || (*dil)[0] < 1 || (*dil)[1] < 1)
    return ctx.fail("conv2d dilation must be 1 or 2 positive integers");
  if (groups < 1) return ctx.fail("conv2d groups must be positive");
  int64_t c = x.dims[1], k = w.dims[0];
  if (!isBatchDim(c) && c % groups != 0)
    return ctx.fail("conv2d input channels (" + std::to_string(c) +
                        ") are not divisible by groups (" + std::to_string(groups) + ")",
                    {0});
  if (k % groups != 0)
    return ctx.fail("conv2d output channels (" + std::to_string(k) +
                    ") are not divisible by groups (" + std::to_string(groups) + ")");
  if (!isBatchDim(c) && w.dims[1] * groups != c)
    return ctx.fail("conv2d weight " + w.str() + " does not match input channels " +
                        std::to_string(c) + " with groups=" + std::to_string(groups),
                    {0, 1});
  // The backward ops' shape rules run this one with their own attributes,
  // which have no residual.
  const AttrValue *hasResidualAttr = ctx.attrs.find("residual");
  bool residual = hasResidualAttr && std::get<bool>(*hasResidualAttr);
  size_t layerOperands = ctx.operands.size() - (residual ? 1 : 0);
  if (layerOperands < 2)
    return ctx.fail("conv2d residual=true needs a residual operand after the weight");
  if (layerOperands > 3)
    return ctx.fail("conv2d takes x, weight and bias; a fourth operand needs residual=true");
  if (layerOperands > 2) {
    const TensorType &b = ctx.operands[2];
    if (b.rank() != 1 || b.dims[0] != k || b.dtype != x.dtype)
      return ctx.fail("conv2d bias must be " + TensorType(x.dtype, {k}).str() + ", got " + b.str(),
                      {2});
  }
  if (isBatchDim(x.dims[2]) || isBatchDim(x.dims[3]))
    return ctx.fail("conv2d needs static spatial dimensions, got " + x.str(), {0});
  int64_t oh = windowOutDim(x.dims[2], w.dims[2], (*stride)[0], (*pad)[0], (*pad)[2], (*dil)[0],
                            false);
  int64_t ow = windowOutDim(x.dims[3], w.dims[3], (*stride)[1], (*pad)[1], (*pad)[3], (*dil)[1],
                            false);
  if (oh < 1 || ow < 1)
    return ctx.fail("conv2d kernel " + std::to_string(w.dims[2]) + "x" +
                        std::to_string(w.dims[3]) + " does not fit the padded input " + x.str(),
                    {0});
  if (Error e = checkFusedActivation(ctx, "conv2d", x.dtype)) return e;
  TensorType y(x.dtype, {x.dims[0], k, oh, ow});
  if (residual && !typesAgree(ctx.operands.back(), y))
    return ctx.fail("conv2d residual " + ctx.operands.back().str() + " does not match the result " +
                        y.str(),
                    {int(ctx.operands.size() - 1)});
  ctx.results = {y};
  return Error::success();
}

// x, weight, then the bias and the residual where present: with
// residual=true the last operand is the residual.
std::vector<const OperandSpec *> bindConv2d(const OpDef &def, const AttrMap &attrs, size_t n) {
  const std::vector<OperandSpec> &o = def.operands;
  if (!attrs.getBool("residual"))
    return n == 2 ? std::vector{&o[0], &o[1]} : n == 3 ? std::vector{&o[0], &o[1], &o[2]}
                                                       : std::vector<const OperandSpec *>{};
  if (n == 3) return {&o[0], &o[1], &o[3]};
  if (n == 4) return {&o[0], &o[1], &o[2], &o[3]};
  return {};
}

// Each output element takes C/groups * KH * KW multiply-accumulates.
int64_t conv2dMacs(const std::vector<TensorType> &in, const std::vector<TensorType> &out,
                   const AttrMap &) {
  const TensorType &w = in[1], &y = out[0];
  return saturatingProduct({batchFactor(y), y.dims[1], y.dims[2], y.dims[3], w.dims[1], w.dims[2],
                            w.dims[3]});
}

// Shared by the data and weight gradients: runs conv2d's shape rule on the
// forward operands x and w (operand positions xAt and wAt) and checks that
// dy (operand 0) has the type of the forward result.
Error checkConvGradient(InferCtx &ctx, const std::string &op, int xAt, int wAt) {
  std::vector<TensorType> forward = {ctx.operands[xAt], ctx.operands[wAt]};
  InferCtx sub{forward, ctx.attrs, {}, {}};
  if (Error e = inferConv2d(sub)) {
    std::vector<int> blame;
    for (int i : sub.blame) blame.push_back(i == 0 ? xAt : wAt);
    return ctx.fail(op + ": " + e.message(), blame);
  }
  const TensorType &dy = ctx.operands[0];
  if (!typesAgree(dy, sub.results[0]))
    return ctx.fail(op + " gradient " + dy.str() + " does not match the conv2d result " +
                        sub.results[0].str(),
                    {0});
  return Error::success();
}

// Operands: dy [N,K,OH,OW], weight, x (the shape donor); the result has x's type.
Error inferConv2dBackwardData(InferCtx &ctx) {
  if (Error e = checkConvGradient(ctx, "conv2d_backward_data", 2, 1)) return e;
  ctx.results = {ctx.operands[2]};
  return Error::success();
}

// Operands: dy [N,K,OH,OW], x, weight (the shape donor); the result has the weight's type.
Error inferConv2dBackwardWeights(InferCtx &ctx) {
  if (Error e = checkConvGradient(ctx, "conv2d_backward_weights", 1, 2)) return e;
  ctx.results = {ctx.operands[2]};
  return Error::success();
}

// Operand: dy [N,K,OH,OW]; the result is [K].
Error inferConv2dBackwardBias(InferCtx &ctx) {
  const TensorType &dy = ctx.operands[0];
  if (dy.rank() != 4 || !isFloatType(dy.dtype))
    return ctx.fail("conv2d_backward_bias expects a 4-d floating-point gradient, got " + dy.str(),
                    {0});
  ctx.results = {TensorType(dy.dtype, {dy.dims[1]})};
  return Error::success();
}

// The gradient ops take the multiply-accumulates of the forward op: operand
// 0 is dy (the forward result) and operand `wAt` the weight.
MacsFn conv2dGradientMacs(size_t wAt) {
  return [wAt](const std::vector<TensorType> &in, const std::vector<TensorType> &,
               const AttrMap &) {
    const TensorType &w = in[wAt], &dy = in[0];
    return saturatingProduct({batchFactor(dy), dy.dims[1], dy.dims[2], dy.dims[3], w.dims[1],
                              w.dims[2], w.dims[3]});
  };
}

// dx = conv2d_backward_data(dy, w, x), dw = conv2d_backward_weights(dy, x, w),
// db = conv2d_backward_bias(dy); each only where the operand needs it. With a
// fused activation, dy is first taken back through it, from the result; a
// residual's gradient is that dy itself.
Error gradConv2d(GradCtx &ctx) {
  if (!ctx.dy[0]) return Error::success();
  Value *dy = preActivationGradient(ctx, ctx.dy[0]);
  if (!dy) return ctx.b.takeError();
  Value *x = ctx.op.operand(0), *w = ctx.op.operand(1);
  AttrMap a = withoutFusedActivation(ctx.op.attrs());
  if (ctx.needed[0] && !(ctx.dx[0] = ctx.b.create1("conv2d_backward_data", {dy, w, x}, a)))
    return ctx.b.takeError();
  if (ctx.needed[1] && !(ctx.dx[1] = ctx.b.create1("conv2d_backward_weights", {dy, x, w}, a)))
    return ctx.b.takeError();
  size_t layer = layerOperandCount(ctx.op);
  if (layer > 2 && ctx.needed[2] && !(ctx.dx[2] = ctx.b.create1("conv2d_backward_bias", {dy})))
    return ctx.b.takeError();
  if (hasResidual(ctx.op) && ctx.needed[layer]) ctx.dx[layer] = dy;
  return Error::success();
}

// conv2d(channels, kernel, stride=1, pad=0, dilation=1, groups=1, bias=true)
Error buildConv2d(LayerCtx &ctx) {
  const TensorType &x = ctx.inputs[0];
  if (x.rank() != 4)
    return ctx.fail("conv2d expects a 4-d input [N,C,H,W], got " + x.str());
  int64_t k = ctx.args.getInt("channels");
  int64_t groups = ctx.args.getInt("groups");
  auto kernel = expandInts(ctx.args.getInts("kernel"), 2);
  if (k < 1) return ctx.fail("conv2d channels must be positive", "channels");
  if (!kernel || (*kernel)[0] < 1 || (*kernel)[1] < 1)
    return ctx.fail("conv2d kernel must be 1 or 2 positive integers", "kernel");
  if (groups < 1) return ctx.fail("conv2d groups must be positive", "groups");
  auto pad = expandPad(ctx.args.getInts("pad"));
  if (!pad) return ctx.fail("conv2d pad must have 1, 2 or 4 entries", "pad");
  auto stride = expandInts(ctx.args.getInts("stride"), 2);
  if (!stride) return ctx.fail("conv2d stride must have 1 or 2 entries", "stride");
  auto dil = expandInts(ctx.args.getInts("dilation"), 2);
  if (!dil) return ctx.fail("conv2d dilation must have 1 or 2 entries", "dilation");
  int64_t c = x.dims[1];
  if (isBatchDim(c)) return ctx.fail("conv2d needs a static channel dimension, got " + x.str());
  if (c % groups != 0)
    return ctx.fail("conv2d input channels (" + std::to_string(c) +
                        ") are not divisible by groups (" + std::to_string(groups) + ")",
                    "groups");
  if (k % groups != 0)
    return ctx.fail("conv2d channels (" + std::to_string(k) + ") are not divisible by groups (" +
                        std::to_string(groups) + ")",
                    "groups");
  ctx.attrs.set("stride", *stride);
  ctx.attrs.set("pad", *pad);
  ctx.attrs.set("dilation", *dil);
  ctx.attrs.set("groups", groups);
  ctx.params.push_back({"weight", TensorType(x.dtype, {k, c / groups, (*kernel)[0], (*kernel)[1]}),
                        ctx.initializer("init", pytorchWeightInit()), true});
  if (ctx.args.getBool("bias"))
    ctx.params.push_back(
        {"bias", TensorType(x.dtype, {k}),
         ctx.initializer("bias_init", pytorchBiasInit(c / groups * (*kernel)[0] * (*kernel)[1])),
         true});
  return Error::success();
}

// The IR attributes of conv2d, shared by its backward ops.
std::vector<AttrSpec> conv2dAttrs() {
  return {{"stride", AttrKind::Ints, AttrValue(std::vector<int64_t>{1, 1})},
          {"pad", AttrKind::Ints, AttrValue(std::vector<int64_t>{0, 0, 0, 0})},
          {"dilation", AttrKind::Ints, AttrValue(std::vector<int64_t>{1, 1})},
          {"groups", AttrKind::Int, AttrValue(int64_t{1})}};
}

// conv2d's attributes: the backward ops' and its fused epilogue.
std::vector<AttrSpec> withFusedEpilogue(std::vector<AttrSpec> attrs) {
  attrs.push_back(fusedActivationAttr());
  attrs.push_back(residualAttr());
  return attrs;
}

} // namespace

void registerConvOps(BuiltinOps &t) {
  t.add({
      .name = "conv2d",
      .summary = "2-d convolution over [N,C,H,W] with an [K,C/groups,KH,KW] weight, then "
                 "optionally a residual added (residual=true: the last operand) and a fused "
                 "activation (act).",
      .operands = {{"x"},
                   {"weight"},
                   {"bias", OperandSpec::Optional},
                   {"residual", OperandSpec::Optional, Effect::Read, 0}},
      .attrs = withFusedEpilogue(conv2dAttrs()),
      .fusion = FusionClass::Opaque,
      .inferShape = inferConv2d,
      .macs = conv2dMacs,
      .layer = LayerSpec{1,
                         {{"channels", AttrKind::Int, std::nullopt},
                          {"kernel", AttrKind::Ints, std::nullopt},
                          {"stride", AttrKind::Ints, AttrValue(std::vector<int64_t>{1})},
                          {"pad", AttrKind::Ints, AttrValue(std::vector<int64_t>{0})},
                          {"dilation", AttrKind::Ints, AttrValue(std::vector<int64_t>{1})},
                          {"groups", AttrKind::Int, AttrValue(int64_t{1})},
                          {"bias", AttrKind::Bool, AttrValue(true)},
                          {"init", AttrKind::String, AttrValue(std::string("he_normal"))},
                          {"bias_init", AttrKind::String, AttrValue(std::string("zeros"))}},
                         buildConv2d},
      .grad = gradConv2d,
      .trainForm = "",
      .bindOperands = bindConv2d,
      .precision = Precision::Low,
  });
  t.add({
      .name = "conv2d_backward_data",
      .summary = "Gradient of conv2d with respect to its input, from dy, the weight and the "
                 "input as shape donor.",
      .operands = {{"dy"}, {"weight"}, shapeOnly("x")},
      .attrs = conv2dAttrs(),
      .fusion = FusionClass::Opaque,
      .inferShape = inferConv2dBackwardData,
      .macs = conv2dGradientMacs(1),
      .layer = std::nullopt,
      .grad = nullptr,
      .trainForm = "",
      .role = OpRole::Backward,
      .internal = true,
      .precision = Precision::Low,
  });
  t.add({
      .name = "conv2d_backward_weights",
      .summary = "Gradient of conv2d with respect to its weight, from dy, the input and the "
                 "weight as shape donor.",
      .operands = {{"dy"}, {"x"}, shapeOnly("weight")},
      .attrs = conv2dAttrs(),
      .fusion = FusionClass::Opaque,
      .inferShape = inferConv2dBackwardWeights,
      .macs = conv2dGradientMacs(2),
      .layer = std::nullopt,
      .grad = nullptr,
      .trainForm = "",
      .role = OpRole::Backward,
      .internal = true,
      .precision = Precision::Low,
  });
  t.add({
      .name = "conv2d_backward_bias",
      .summary = "Gradient of conv2d with respect to its bias: dy [N,K,OH,OW] summed to [K].",
      .operands = {{"dy"}},
      .attrs = {},
      .fusion = FusionClass::Opaque,
      .inferShape = inferConv2dBackwardBias,
      .macs = nullptr,
      .layer = std::nullopt,
      .grad = nullptr,
      .trainForm = "",
      .role = OpRole::Backward,
      .internal = true,
      .precision = Precision::Low,
  });
}

} // namespace dtnn::ir
