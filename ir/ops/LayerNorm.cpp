// Layer normalization, as torch.nn.LayerNorm: each sample's last `axes`
// dimensions (the normalized shape) are normalized by their own mean and
// biased variance, y = (x - mean) / sqrt(var + eps) * gamma + beta, with
// gamma and beta of the normalized shape when the layer is affine. Unlike
// batch norm it keeps no running statistics and trains and infers alike; its
// backward recomputes the statistics from x (one more read of x, no results
// to keep).
#include "ir/Builder.h"
#include "ir/OpTable.h"
#include "ir/ops/ShapeUtil.h"

#include <cmath>

namespace dtnn::ir {

namespace {

// The normalized shape of x: its last `axes` dimensions, or why there is none.
Expected<std::vector<int64_t>> normalizedShape(const TensorType &x, int64_t axes) {
  if (!isFloatType(x.dtype))
    return Error::make("layernorm expects a floating-point input, got " + x.str());
  if (x.rank() < 2)
    return Error::make("layernorm needs axes after the batch axis to normalize, got " + x.str());
  if (axes < 1 || axes >= int64_t(x.rank()))
    return Error::make("layernorm axes=" + std::to_string(axes) + " must count 1 to " +
                       std::to_string(x.rank() - 1) + " trailing axes of " + x.str() +
                       " (the batch axis is not normalized)");
  std::vector<int64_t> shape(x.dims.end() - axes, x.dims.end());
  for (int64_t d : shape)
    if (isBatchDim(d))
      return Error::make("layernorm cannot normalize the symbolic batch dimension of " + x.str());
  return shape;
}

// Checks that gamma and beta, when given, both have the normalized shape, in
// x's type or its statistics type (float32 for bf16 x).
Error checkAffine(InferCtx &ctx, size_t first, const TensorType &x, size_t count) {
  Expected<std::vector<int64_t>> shape = normalizedShape(x, ctx.attrs.getInt("axes"));
  if (!shape) return ctx.fail(shape.error().message(), {0});
  TensorType want(statisticsType(x.dtype), *shape);
  for (size_t i = first; i < first + count && i < ctx.operands.size(); ++i)
    if (ctx.operands[i].dims != want.dims ||
        !isStatisticsTypeOf(ctx.operands[i].dtype, x.dtype))
      return ctx.fail("layernorm " + std::string(i == first ? "gamma" : "beta") + " must be " +
                          want.str() + ", got " + ctx.operands[i].str(),
                      {int(i)});
  if (!(ctx.attrs.getFloat("eps") > 0) || !std::isfinite(ctx.attrs.getFloat("eps")))
    return ctx.fail("layernorm eps must be a positive number");
  return Error::success();
}

// Operands: x, then gamma and beta (both or neither) of the normalized shape.
Error inferLayerNorm(InferCtx &ctx) {
  if (ctx.operands.size() == 2)
    return ctx.fail("layernorm takes gamma and beta together, or neither", {1});
  if (Error e = checkAffine(ctx, 1, ctx.operands[0], 2)) return e;
  ctx.results = {ctx.operands[0]};
  return Error::success();
}

// Operands: dy and x of one type, then gamma if the forward had one. Results:
// dx, and dgamma and dbeta of the normalized shape.
Error inferLayerNormBackward(InferCtx &ctx) {
  const TensorType &x = ctx.operands[1];
  if (ctx.operands[0] != x)
    return ctx.fail(
        "layernorm_backward dy " + ctx.operands[0].str() + " does not match x " + x.str(), {0, 1});
  if (Error e = checkAffine(ctx, 2, x, 1)) return e;
  TensorType affine(statisticsType(x.dtype), *normalizedShape(x, ctx.attrs.getInt("axes")));
  ctx.results = {x, affine, affine};
  return Error::success();
}

Error gradLayerNorm(GradCtx &ctx) {
  if (!ctx.dy[0]) return Error::success();
  const Op &op = ctx.op;
  std::vector<Value *> in = {ctx.dy[0], op.operand(0)};
  if (op.operands().size() > 1) in.push_back(op.operand(1));
  auto r = ctx.b.create("layernorm_backward", in, op.attrs());
  if (r.empty()) return ctx.b.takeError();
  for (size_t i = 0; i < 3 && i < op.operands().size(); ++i)
    if (ctx.needed[i]) ctx.dx[i] = r[i];
  return Error::success();
}

// layernorm(axes=1, eps=1e-5, affine=true)
Error buildLayerNorm(LayerCtx &ctx) {
  const TensorType &x = ctx.inputs[0];
  int64_t axes = ctx.args.getInt("axes");
  Expected<std::vector<int64_t>> shape = normalizedShape(x, axes);
  if (!shape) return ctx.fail(shape.error().message(), "axes");
  double eps = ctx.args.getFloat("eps");
  if (!(eps > 0) || !std::isfinite(eps)) return ctx.fail("layernorm eps must be positive", "eps");
  ctx.attrs.set("axes", axes);
  ctx.attrs.set("eps", eps);
  if (ctx.args.getBool("affine")) {
    TensorType affine(statisticsType(x.dtype), *shape);
    ctx.params.push_back({"gamma", affine, "ones", true});
    ctx.params.push_back({"beta", affine, "zeros", true});
  }
  return Error::success();
}

std::vector<AttrSpec> layerNormAttrs() {
  return {{"axes", AttrKind::Int, AttrValue(int64_t(1))},
          {"eps", AttrKind::Float, AttrValue(1e-5)}};
}

} // namespace

void registerLayerNormOps(BuiltinOps &t) {
  std::vector<AttrSpec> layerArgs = layerNormAttrs();
  layerArgs.push_back({"affine", AttrKind::Bool, AttrValue(true)});
  t.add({
      .name = "layernorm",
      .summary = "Layer normalization over the last `axes` dimensions of each sample, with "
                 "gamma and beta of that shape when affine.",
      .operands = {reusable("x"),
                   {"gamma", OperandSpec::Optional},
                   {"beta", OperandSpec::Optional}},
      .attrs = layerNormAttrs(),
      .fusion = FusionClass::Opaque,
      .inferShape = inferLayerNorm,
      .macs = nullptr,
      .layer = LayerSpec{1, layerArgs, buildLayerNorm},
      .grad = gradLayerNorm,
      .trainForm = "",
      .precision = Precision::Follow,
      .floatOperands = {"gamma", "beta"},
  });
  t.add({
      .name = "layernorm_backward",
      .summary = "The gradients of layernorm: dx, and dgamma and dbeta summed over the "
                 "samples and leading dimensions (zero without gamma); the statistics are "
                 "recomputed from x.",
      .operands = {{"dy"}, {"x"}, {"gamma", OperandSpec::Optional}},
      .attrs = layerNormAttrs(),
      .numResults = 3,
      .fusion = FusionClass::Opaque,
      .inferShape = inferLayerNormBackward,
      .macs = nullptr,
      .layer = std::nullopt,
      .grad = nullptr,
      .role = OpRole::Backward,
      .internal = true,
      .precision = Precision::Follow,
      .floatOperands = {"gamma"},
  });
}

} // namespace dtnn::ir
