// Fully connected layer: dense, y = x * weight^T + bias over [N,K] inputs,
// and the three ops of its gradient.
#include "ir/Builder.h"
#include "ir/OpTable.h"
#include "ir/ops/FusedActivation.h"
#include "ir/ops/ShapeUtil.h"

namespace dtnn::ir {

namespace {

// The message for a non-matrix input, shared by the shape rule and the layer.
std::string denseRankMessage(const TensorType &x) {
  return "dense expects a 2-d input [N,K], got " + x.str() + "; insert `flatten` before it";
}

// Operands: x [N,K], weight [M,K], optional bias [M].
Error inferDense(InferCtx &ctx) {
  const TensorType &x = ctx.operands[0];
  const TensorType &w = ctx.operands[1];
  if (x.rank() != 2) return ctx.fail(denseRankMessage(x), {0});
  if (w.rank() != 2) return ctx.fail("dense weight must be 2-d [M,K], got " + w.str(), {1});
  if (w.dtype != x.dtype)
    return ctx.fail(
        "dense weight " + w.str() + " does not match the element type of input " + x.str(), {0, 1});
  int64_t k = x.dims[1], m = w.dims[0];
  if (k != kDynamic && k != w.dims[1])
    return ctx.fail("dense weight " + w.str() + " does not match input " + x.str() +
                        " (inner dimensions differ)",
                    {0, 1});
  if (ctx.operands.size() > 2) {
    const TensorType &b = ctx.operands[2];
    if (b.rank() != 1 || b.dims[0] != m || b.dtype != x.dtype)
      return ctx.fail("dense bias must be " + TensorType(x.dtype, {m}).str() + ", got " + b.str(),
                      {2});
  }
  if (Error e = checkFusedActivation(ctx, "dense", x.dtype)) return e;
  ctx.results = {TensorType(x.dtype, {x.dims[0], m})};
  return Error::success();
}

// One multiply-accumulate per weight element and sample.
int64_t denseMacs(const std::vector<TensorType> &operands, const std::vector<TensorType> &,
                  const AttrMap &) {
  return operands[1].staticElements();
}

// Checks that operand `i` of a dense backward op is a floating-point matrix
// of the element type of dy (operand 0); `what` names it in the message.
Error checkMatrix(InferCtx &ctx, const std::string &op, size_t i, const char *what) {
  const TensorType &t = ctx.operands[i];
  if (t.rank() != 2) return ctx.fail(op + " expects a 2-d " + what + ", got " + t.str(), {int(i)});
  if (!isFloatType(t.dtype))
    return ctx.fail(op + " expects a floating-point " + what + ", got " + t.str(), {int(i)});
  if (t.dtype != ctx.operands[0].dtype)
    return ctx.fail(op + " " + what + " " + t.str() + " does not match the element type of dy " +
                        ctx.operands[0].str(),
                    {0, int(i)});
  return Error::success();
}

// Operands: dy [N,M], weight [M,K]; result dx [N,K].
Error inferDenseBackwardData(InferCtx &ctx) {
  const std::string op = "dense_backward_data";
  if (Error e = checkMatrix(ctx, op, 0, "dy")) return e;
  if (Error e = checkMatrix(ctx, op, 1, "weight")) return e;
  const TensorType &dy = ctx.operands[0], &w = ctx.operands[1];
  if (!dimsAgree(dy.dims[1], w.dims[0]))
    return ctx.fail(op + " dy " + dy.str() + " does not match weight " + w.str(), {0, 1});
  ctx.results = {TensorType(dy.dtype, {dy.dims[0], w.dims[1]})};
  return Error::success();
}

// Operands: dy [N,M], x [N,K]; result dweight [M,K].
Error inferDenseBackwardWeights(InferCtx &ctx) {
  const std::string op = "dense_backward_weights";
  if (Error e = checkMatrix(ctx, op, 0, "dy")) return e;
  if (Error e = checkMatrix(ctx, op, 1, "x")) return e;
  const TensorType &dy = ctx.operands[0], &x = ctx.operands[1];
  if (!dimsAgree(dy.dims[0], x.dims[0]))
    return ctx.fail(op + " dy " + dy.str() + " and x " + x.str() + " differ in the batch", {0, 1});
  ctx.results = {TensorType(dy.dtype, {dy.dims[1], x.dims[1]})};
  return Error::success();
}

// Operand: dy [N,M]; result dbias [M].
Error inferDenseBackwardBias(InferCtx &ctx) {
  if (Error e = checkMatrix(ctx, "dense_backward_bias", 0, "dy")) return e;
  const TensorType &dy = ctx.operands[0];
  ctx.results = {TensorType(dy.dtype, {dy.dims[1]})};
  return Error::success();
}

// One multiply-accumulate per weight element and sample, as the forward.
int64_t denseBackwardDataMacs(const std::vector<TensorType> &operands,
                              const std::vector<TensorType> &, const AttrMap &) {
  return operands[1].staticElements();
}
int64_t denseBackwardWeightsMacs(const std::vector<TensorType> &,
                                 const std::vector<TensorType> &results, const AttrMap &) {
  return results[0].staticElements();
}

// dx = dy * weight, dweight = dy^T * x, dbias = the sum of dy over the batch;
// with a fused activation, dy is first taken back through it, from the result.
Error gradDense(GradCtx &ctx) {
  if (!ctx.dy[0]) return Error::success();
  Value *dy = preActivationGradient(ctx, ctx.dy[0]);
  if (!dy) return ctx.b.takeError();
  const Op &op = ctx.op;
  if (ctx.needed[0] && !(ctx.dx[0] = ctx.b.create1("dense_backward_data", {dy, op.operand(1)})))
    return ctx.b.takeError();
  if (ctx.needed[1] && !(ctx.dx[1] = ctx.b.create1("dense_backward_weights", {dy, op.operand(0)})))
    return ctx.b.takeError();
  if (op.operands().size() > 2 && ctx.needed[2] &&
      !(ctx.dx[2] = ctx.b.create1("dense_backward_bias", {dy})))
    return ctx.b.takeError();
  return Error::success();
}

// dense(units, bias=true, init="he_normal")
Error buildDense(LayerCtx &ctx) {
  const TensorType &x = ctx.inputs[0];
  if (x.rank() != 2) return ctx.fail(denseRankMessage(x));
  int64_t units = ctx.args.getInt("units");
  if (units < 1) return ctx.fail("dense units must be positive", "units");
  int64_t k = x.dims[1];
  if (k == kDynamic) return ctx.fail("dense needs a static feature dimension, got " + x.str());
  ctx.params.push_back(
      {"weight", TensorType(x.dtype, {units, k}), ctx.args.getString("init"), true});
  if (ctx.args.getBool("bias"))
    ctx.params.push_back({"bias", TensorType(x.dtype, {units}), "zeros", true});
  return Error::success();
}

} // namespace

void registerDenseOps(BuiltinOps &t) {
  t.add({
      .name = "dense",
      .summary = "Fully connected layer mapping [N,K] to [N,M] with an [M,K] weight, then "
                 "optionally a fused activation (act).",
      .operands = {{"x"}, {"weight"}, {"bias", OperandSpec::Optional}},
      .attrs = {fusedActivationAttr()},
      .fusion = FusionClass::Opaque,
      .inferShape = inferDense,
      .macs = denseMacs,
      .layer = LayerSpec{1,
                         {{"units", AttrKind::Int, std::nullopt},
                          {"bias", AttrKind::Bool, AttrValue(true)},
                          {"init", AttrKind::String, AttrValue(std::string("he_normal"))}},
                         buildDense},
      .grad = gradDense,
  });
  t.add({
      .name = "dense_backward_data",
      .summary = "Gradient of dense with respect to its input: dy [N,M] times weight [M,K].",
      .operands = {{"dy"}, {"weight"}},
      .attrs = {},
      .fusion = FusionClass::Opaque,
      .inferShape = inferDenseBackwardData,
      .macs = denseBackwardDataMacs,
      .layer = std::nullopt,
      .role = OpRole::Backward,
      .internal = true,
  });
  t.add({
      .name = "dense_backward_weights",
      .summary = "Gradient of dense with respect to its weight: dy^T [M,N] times x [N,K].",
      .operands = {{"dy"}, {"x"}},
      .attrs = {},
      .fusion = FusionClass::Opaque,
      .inferShape = inferDenseBackwardWeights,
      .macs = denseBackwardWeightsMacs,
      .layer = std::nullopt,
      .role = OpRole::Backward,
      .internal = true,
  });
  t.add({
      .name = "dense_backward_bias",
      .summary = "Gradient of dense with respect to its bias: dy [N,M] summed over the batch.",
      .operands = {{"dy"}},
      .attrs = {},
      .fusion = FusionClass::Reduce,
      .inferShape = inferDenseBackwardBias,
      .macs = nullptr,
      .layer = std::nullopt,
      .role = OpRole::Backward,
      .internal = true,
  });
}

} // namespace dtnn::ir
