// Normalization and regularization: batchnorm (over channel dimension 1 of a
// 2-d or 4-d input) and dropout.
#include "ir/OpTable.h"
#include "ir/ops/ShapeUtil.h"

namespace dtnn::ir {

namespace {

// The names of batchnorm's per-channel operands, by operand index.
const char *const kBatchNormOperands[] = {"x", "gamma", "beta", "mean", "var"};

// Checks that x is a 2-d or 4-d floating-point tensor; the message is
// shared by the shape rule and the layer builder.
std::optional<std::string> checkBatchNormInput(const TensorType &x) {
  if (x.rank() != 2 && x.rank() != 4)
    return "batchnorm expects a 2-d [N,C] or 4-d [N,C,H,W] input, got " + x.str();
  if (!isFloatType(x.dtype)) return "batchnorm expects a floating-point input, got " + x.str();
  return std::nullopt;
}

// Operands: x [N,C] or [N,C,H,W], then gamma, beta, mean and var, each [C].
bool inferBatchNorm(InferCtx &ctx) {
  const TensorType &x = ctx.operands[0];
  if (auto msg = checkBatchNormInput(x)) return ctx.fail(*msg, {0});
  int64_t c = x.dims[1];
  for (int i = 1; i < 5; ++i) {
    const TensorType &p = ctx.operands[i];
    if (p.rank() != 1 || p.dtype != x.dtype || (c != kDynamic && p.dims[0] != c))
      return ctx.fail(std::string("batchnorm ") + kBatchNormOperands[i] + " must be " +
                          TensorType(x.dtype, {c}).str() + " to match input " + x.str() + ", got " +
                          p.str(),
                      {0, i});
  }
  double eps = ctx.attrs.getFloat("eps");
  double momentum = ctx.attrs.getFloat("momentum");
  if (!(eps > 0)) return ctx.fail("batchnorm eps must be positive");
  if (!(momentum >= 0 && momentum <= 1)) return ctx.fail("batchnorm momentum must be in [0, 1]");
  ctx.results = {x};
  return true;
}

// batchnorm(eps=1e-5, momentum=0.1)
bool buildBatchNorm(LayerCtx &ctx) {
  const TensorType &x = ctx.inputs[0];
  if (auto msg = checkBatchNormInput(x)) return ctx.fail(*msg);
  int64_t c = x.dims[1];
  if (c == kDynamic) return ctx.fail("batchnorm needs a static channel dimension, got " + x.str());
  double eps = ctx.args.getFloat("eps");
  double momentum = ctx.args.getFloat("momentum");
  if (!(eps > 0)) return ctx.fail("batchnorm eps must be positive", "eps");
  if (!(momentum >= 0 && momentum <= 1))
    return ctx.fail("batchnorm momentum must be in [0, 1]", "momentum");
  ctx.attrs.set("eps", eps);
  ctx.attrs.set("momentum", momentum);
  TensorType perChannel(x.dtype, {c});
  ctx.params.push_back({"gamma", perChannel, "ones", true});
  ctx.params.push_back({"beta", perChannel, "zeros", true});
  ctx.params.push_back({"running_mean", perChannel, "zeros", false});
  ctx.params.push_back({"running_var", perChannel, "ones", false});
  return true;
}

// Operand: x of any shape; the result has its type.
bool inferDropout(InferCtx &ctx) {
  const TensorType &x = ctx.operands[0];
  if (!isFloatType(x.dtype))
    return ctx.fail("dropout expects a floating-point input, got " + x.str(), {0});
  double rate = ctx.attrs.getFloat("rate");
  if (!(rate >= 0 && rate < 1)) return ctx.fail("dropout rate must be in [0, 1)");
  ctx.results = {x};
  return true;
}

} // namespace

void registerNormOps(OpTable &t) {
  t.add({
      .name = "batchnorm",
      .summary = "Batch normalization over channel dimension 1 with running mean and variance.",
      .operands = {{"x"}, {"gamma"}, {"beta"}, {"mean"}, {"var"}},
      .attrs = {{"eps", AttrKind::Float, AttrValue(1e-5)},
                {"momentum", AttrKind::Float, AttrValue(0.1)}},
      .fusion = FusionClass::Opaque,
      .inferShape = inferBatchNorm,
      .macs = nullptr,
      .layer = LayerSpec{1,
                         {{"eps", AttrKind::Float, AttrValue(1e-5)},
                          {"momentum", AttrKind::Float, AttrValue(0.1)}},
                         buildBatchNorm},
  });
  // Dropout draws random numbers, so two dropouts of one value must not merge.
  t.add({
      .name = "dropout",
      .summary = "Zeroes each element with probability rate and scales the rest by 1/(1-rate).",
      .operands = {{"x"}},
      .attrs = {{"rate", AttrKind::Float, AttrValue(0.5)}},
      .fusion = FusionClass::Elementwise,
      .hasSideEffects = true,
      .inferShape = inferDropout,
      .macs = nullptr,
      .layer = std::nullopt,
  });
}

} // namespace dtnn::ir
