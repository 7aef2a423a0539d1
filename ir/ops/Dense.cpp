// Fully connected layer: dense, y = x * weight^T + bias over [N,K] inputs,
// and the three ops of its gradient.
#include "ir/Builder.h"
#include "ir/InitSpec.h"
#include "ir/OpTable.h"
#include "ir/ops/FusedActivation.h"
#include "ir/ops/ShapeUtil.h"

namespace dtnn::ir {

namespace {

// The message for a non-matrix input, shared by the shape rule and the layer.
std::string denseRankMessage(const TensorType &x) {
  return "dense maps the last axis of an input [N,...,K], got " + x.str() +
         "; for a 4-d feature map [N,C,H,W] insert `flatten` (or global_avgpool) before it";
}

// x's dimensions with the last replaced by `m`.
std::vector<int64_t> withLast(const TensorType &x, int64_t m) {
  std::vector<int64_t> dims = x.dims;
  dims.back() = m;
  return dims;
}

// Whether a and b agree in every dimension but the last.
bool leadingAgree(const TensorType &a, const TensorType &b) {
  if (a.rank() != b.rank()) return false;
  for (size_t i = 0; i + 1 < a.rank(); ++i)
    if (!dimsAgree(a.dims[i], b.dims[i])) return false;
  return true;
}

// Operands: x [N,...,K] (any rank from 2: nn.Linear maps the last axis),
// weight [M,K], optional bias [M]. The result is x's shape with M last.
Error inferDense(InferCtx &ctx) {
  const TensorType &x = ctx.operands[0];
  const TensorType &w = ctx.operands[1];
  if (x.rank() < 2) return ctx.fail(denseRankMessage(x), {0});
  if (w.rank() != 2) return ctx.fail("dense weight must be 2-d [M,K], got " + w.str(), {1});
  if (w.dtype != x.dtype)
    return ctx.fail(
        "dense weight " + w.str() + " does not match the element type of input " + x.str(), {0, 1});
  int64_t k = x.dims.back(), m = w.dims[0];
  if (!isBatchDim(k) && k != w.dims[1]) {
    int64_t sample = 1;
    for (size_t i = 1; i < x.rank(); ++i) sample *= x.dims[i];
    bool flattened = x.rank() > 2 && sample == w.dims[1];
    return ctx.fail("dense weight " + w.str() + " does not match input " + x.str() +
                        " (inner dimensions differ)" +
                        (flattened ? "; dense maps the last axis: to map each whole sample, "
                                     "insert `flatten` before it"
                                   : ""),
                    {0, 1});
  }
  if (ctx.operands.size() > 2) {
    const TensorType &b = ctx.operands[2];
    if (b.rank() != 1 || b.dims[0] != m || b.dtype != x.dtype)
      return ctx.fail("dense bias must be " + TensorType(x.dtype, {m}).str() + ", got " + b.str(),
                      {2});
  }
  if (Error e = checkFusedActivation(ctx, "dense", x.dtype)) return e;
  ctx.results = {TensorType(x.dtype, withLast(x, m))};
  return Error::success();
}

// The rows a sample of x [N,...,K] holds: the product of its middle dimensions
// (times k for x of [?*k,...,K]).
int64_t rowsPerSample(const TensorType &x) {
  int64_t rows = batchFactor(x);
  for (size_t i = 1; i + 1 < x.rank(); ++i) rows *= batchMultiple(x.dims[i]);
  return rows;
}

// One multiply-accumulate per weight element and row of a sample.
int64_t denseMacs(const std::vector<TensorType> &operands, const std::vector<TensorType> &,
                  const AttrMap &) {
  return operands[1].staticElements() * rowsPerSample(operands[0]);
}

// Checks that operand `i` of a dense backward op is a floating-point tensor
// of the element type of dy (operand 0), 2-d or (`rows`) of any rank from 2;
// `what` names it in the message.
Error checkMatrix(InferCtx &ctx, const std::string &op, size_t i, const char *what,
                  bool rows = false) {
  const TensorType &t = ctx.operands[i];
  if (rows ? t.rank() < 2 : t.rank() != 2)
    return ctx.fail(op + " expects a " + (rows ? "[N,...,K] " : "2-d ") + what + ", got " +
                        t.str(),
                    {int(i)});
  if (!isFloatType(t.dtype))
    return ctx.fail(op + " expects a floating-point " + what + ", got " + t.str(), {int(i)});
  if (t.dtype != ctx.operands[0].dtype)
    return ctx.fail(op + " " + what + " " + t.str() + " does not match the element type of dy " +
                        ctx.operands[0].str(),
                    {0, int(i)});
  return Error::success();
}

// Operands: dy [N,...,M], weight [M,K]; result dx [N,...,K].
Error inferDenseBackwardData(InferCtx &ctx) {
  const std::string op = "dense_backward_data";
  if (Error e = checkMatrix(ctx, op, 0, "dy", true)) return e;
  if (Error e = checkMatrix(ctx, op, 1, "weight")) return e;
  const TensorType &dy = ctx.operands[0], &w = ctx.operands[1];
  if (!dimsAgree(dy.dims.back(), w.dims[0]))
    return ctx.fail(op + " dy " + dy.str() + " does not match weight " + w.str(), {0, 1});
  ctx.results = {TensorType(dy.dtype, withLast(dy, w.dims[1]))};
  return Error::success();
}

// Operands: dy [N,...,M], x [N,...,K]; result dweight [M,K], summed over every row.
Error inferDenseBackwardWeights(InferCtx &ctx) {
  const std::string op = "dense_backward_weights";
  if (Error e = checkMatrix(ctx, op, 0, "dy", true)) return e;
  if (Error e = checkMatrix(ctx, op, 1, "x", true)) return e;
  const TensorType &dy = ctx.operands[0], &x = ctx.operands[1];
  if (!leadingAgree(dy, x))
    return ctx.fail(op + " dy " + dy.str() + " and x " + x.str() + " differ in the batch", {0, 1});
  ctx.results = {TensorType(dy.dtype, {dy.dims.back(), x.dims.back()})};
  return Error::success();
}

// Operand: dy [N,...,M]; result dbias [M].
Error inferDenseBackwardBias(InferCtx &ctx) {
  if (Error e = checkMatrix(ctx, "dense_backward_bias", 0, "dy", true)) return e;
  const TensorType &dy = ctx.operands[0];
  ctx.results = {TensorType(dy.dtype, {dy.dims.back()})};
  return Error::success();
}

// One multiply-accumulate per weight element and row of a sample, as the forward.
int64_t denseBackwardDataMacs(const std::vector<TensorType> &operands,
                              const std::vector<TensorType> &, const AttrMap &) {
  return operands[1].staticElements() * rowsPerSample(operands[0]);
}
int64_t denseBackwardWeightsMacs(const std::vector<TensorType> &operands,
                                 const std::vector<TensorType> &results, const AttrMap &) {
  return results[0].staticElements() * rowsPerSample(operands[0]);
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

// dense(units, bias=true, init="he_normal", bias_init="zeros")
Error buildDense(LayerCtx &ctx) {
  const TensorType &x = ctx.inputs[0];
  if (x.rank() < 2) return ctx.fail(denseRankMessage(x));
  int64_t units = ctx.args.getInt("units");
  if (units < 1) return ctx.fail("dense units must be positive", "units");
  int64_t k = x.dims.back();
  if (isBatchDim(k)) return ctx.fail("dense needs a static feature dimension, got " + x.str());
  ctx.params.push_back({"weight", TensorType(x.dtype, {units, k}),
                        ctx.initializer("init", pytorchWeightInit()), true});
  if (ctx.args.getBool("bias"))
    ctx.params.push_back({"bias", TensorType(x.dtype, {units}),
                          ctx.initializer("bias_init", pytorchBiasInit(k)), true});
  return Error::success();
}

} // namespace

void registerDenseOps(BuiltinOps &t) {
  t.add({
      .name = "dense",
      .summary = "Fully connected layer mapping the last axis of [N,...,K] to M with an [M,K] "
                 "weight, as nn.Linear, then optionally a fused activation (act).",
      .operands = {{"x"}, {"weight"}, {"bias", OperandSpec::Optional}},
      .attrs = {fusedActivationAttr()},
      .fusion = FusionClass::Opaque,
      .inferShape = inferDense,
      .macs = denseMacs,
      .layer = LayerSpec{1,
                         {{"units", AttrKind::Int, std::nullopt},
                          {"bias", AttrKind::Bool, AttrValue(true)},
                          {"init", AttrKind::String, AttrValue(std::string("he_normal"))},
                          {"bias_init", AttrKind::String, AttrValue(std::string("zeros"))}},
                         buildDense},
      .grad = gradDense,
      .precision = Precision::Low,
  });
  t.add({
      .name = "dense_backward_data",
      .summary = "Gradient of dense with respect to its input: dy [N,...,M] times weight [M,K].",
      .operands = {{"dy"}, {"weight"}},
      .attrs = {},
      .fusion = FusionClass::Opaque,
      .inferShape = inferDenseBackwardData,
      .macs = denseBackwardDataMacs,
      .layer = std::nullopt,
      .role = OpRole::Backward,
      .internal = true,
      .precision = Precision::Low,
  });
  t.add({
      .name = "dense_backward_weights",
      .summary = "Gradient of dense with respect to its weight: dy^T times x over every row of "
                 "[N,...,M] and [N,...,K].",
      .operands = {{"dy"}, {"x"}},
      .attrs = {},
      .fusion = FusionClass::Opaque,
      .inferShape = inferDenseBackwardWeights,
      .macs = denseBackwardWeightsMacs,
      .layer = std::nullopt,
      .role = OpRole::Backward,
      .internal = true,
      .precision = Precision::Low,
  });
  t.add({
      .name = "dense_backward_bias",
      .summary = "Gradient of dense with respect to its bias: dy [N,...,M] summed over every row.",
      .operands = {{"dy"}},
      .attrs = {},
      .fusion = FusionClass::Reduce,
      .inferShape = inferDenseBackwardBias,
      .macs = nullptr,
      .layer = std::nullopt,
      .role = OpRole::Backward,
      .internal = true,
      .precision = Precision::Low,
  });
}

} // namespace dtnn::ir
