// Normalization and regularization: batchnorm (over channel dimension 1 of a
// 2-d or 4-d input), its training form batchnorm_train, the ops of their
// gradients, and dropout (its training form is in ir/ops/Dropout.cpp).
#include "ir/Builder.h"
#include "ir/OpTable.h"
#include "ir/ops/FusedActivation.h"
#include "ir/ops/ShapeUtil.h"

namespace dtnn::ir {

namespace {

// The names of batchnorm's per-channel operands, by operand index.
const char *const kBatchNormOperands[] = {"x", "gamma", "beta", "mean", "var"};

// Checks that x is a 2-d or 4-d floating-point tensor with a static channel
// dimension; the message, which names `op`, is shared by the shape rules and
// the layer builder.
std::optional<std::string> checkBatchNormInput(const std::string &op, const TensorType &x) {
  if (x.rank() != 2 && x.rank() != 4)
    return op + " expects a 2-d [N,C] or 4-d [N,C,H,W] input, got " + x.str();
  if (!isFloatType(x.dtype)) return op + " expects a floating-point input, got " + x.str();
  if (isBatchDim(x.dims[1])) return op + " needs a static channel dimension, got " + x.str();
  return std::nullopt;
}

// True when x has static batch and spatial dimensions that leave exactly one
// value per channel, so the unbiased variance of a batch is undefined.
bool oneValuePerChannel(const TensorType &x) {
  for (size_t d = 0; d < x.rank(); ++d)
    if (d != 1 && x.dims[d] != 1) return false;
  return true;
}

// Checks that operands [first, end) of `op` are [C] vectors of x's element
// type or its statistics type (float32 for bf16 data), where x is operand `xIndex` (already checked by checkBatchNormInput,
// so C is static); `names` holds every operand's name.
Error checkPerChannel(InferCtx &ctx, const std::string &op, const char *const *names, int xIndex,
                      int first, int end) {
  const TensorType &x = ctx.operands[xIndex];
  int64_t c = x.dims[1];
  for (int i = first; i < end; ++i) {
    const TensorType &p = ctx.operands[i];
    if (p.rank() != 1 || !isStatisticsTypeOf(p.dtype, x.dtype) || p.dims[0] != c)
      return ctx.fail(op + " " + names[i] + " must be " +
                          TensorType(statisticsType(x.dtype), {c}).str() +
                          " to match input " + x.str() + ", got " + p.str(),
                      {xIndex, i});
  }
  return Error::success();
}

// Checks the eps and momentum attributes of batchnorm and batchnorm_train
// (`op`, which the messages name).
Error checkBatchNormAttrs(InferCtx &ctx, const std::string &op) {
  double eps = ctx.attrs.getFloat("eps");
  double momentum = ctx.attrs.getFloat("momentum");
  if (!(eps > 0)) return ctx.fail(op + " eps must be positive");
  if (!(momentum >= 0 && momentum <= 1)) return ctx.fail(op + " momentum must be in [0, 1]");
  return Error::success();
}

// Operands: x [N,C] or [N,C,H,W], then gamma, beta, mean and var, each [C].
Error inferBatchNorm(InferCtx &ctx) {
  const TensorType &x = ctx.operands[0];
  if (auto msg = checkBatchNormInput("batchnorm", x)) return ctx.fail(*msg, {0});
  if (Error e = checkPerChannel(ctx, "batchnorm", kBatchNormOperands, 0, 1, 5)) return e;
  if (Error e = checkBatchNormAttrs(ctx, "batchnorm")) return e;
  if (Error e = checkFusedActivation(ctx, "batchnorm", x.dtype)) return e;
  ctx.results = {x};
  return Error::success();
}

// The names of batchnorm_fold's operands, by operand index.
const char *const kFoldOperands[] = {"weight", "gamma", "beta", "mean", "var", "bias"};

// Operands: the weight of a convolution or dense layer ([K,...], rank >= 2),
// then gamma, beta, mean and var of the batch norm after it, and optionally
// the layer's bias, each [K]; results: the folded weight (the weight's type)
// and bias ([K]).
Error inferBatchNormFold(InferCtx &ctx) {
  const std::string op = "batchnorm_fold";
  const TensorType &w = ctx.operands[0];
  if (w.rank() < 2 || !isFloatType(w.dtype) || isBatchDim(w.dims[0]))
    return ctx.fail(op + " expects a floating-point weight [K,...] of rank 2 or more with a "
                         "static K, got " + w.str(), {0});
  int64_t k = w.dims[0];
  for (size_t i = 1; i < ctx.operands.size(); ++i) {
    const TensorType &p = ctx.operands[i];
    if (p.rank() != 1 || !isStatisticsTypeOf(p.dtype, w.dtype) || p.dims[0] != k)
      return ctx.fail(op + " " + kFoldOperands[i] + " must be " +
                          TensorType(statisticsType(w.dtype), {k}).str() +
                          " to match weight " + w.str() + ", got " + p.str(),
                      {0, int(i)});
  }
  if (!(ctx.attrs.getFloat("eps") > 0)) return ctx.fail(op + " eps must be positive");
  ctx.results = {w, TensorType(w.dtype, {k})};
  return Error::success();
}

// The names of batchnorm_train's operands, by operand index.
const char *const kBatchNormTrainOperands[] = {"x", "gamma", "beta", "running_mean", "running_var"};

// Operands as batchnorm; results y (x's type), then the batch mean and the
// inverse standard deviation 1/sqrt(var + eps), each [C]. As in PyTorch, a
// batch with one value per channel is rejected where the shape shows it.
Error inferBatchNormTrain(InferCtx &ctx) {
  const std::string op = "batchnorm_train";
  const TensorType &x = ctx.operands[0];
  if (auto msg = checkBatchNormInput(op, x)) return ctx.fail(*msg, {0});
  if (oneValuePerChannel(x))
    return ctx.fail(op + " needs more than one value per channel, got " + x.str(), {0});
  if (Error e = checkPerChannel(ctx, op, kBatchNormTrainOperands, 0, 1, 5)) return e;
  if (Error e = checkBatchNormAttrs(ctx, op)) return e;
  if (Error e = checkFusedActivation(ctx, op, x.dtype)) return e;
  TensorType perChannel(statisticsType(x.dtype), {x.dims[1]});
  ctx.results = {x, perChannel, perChannel};
  return Error::success();
}

// Shared by the two backward ops: operands dy, x (both x's type), then three
// [C] vectors; results dx (x's type), dgamma and dbeta ([C]).
Error inferBatchNormGrad(InferCtx &ctx, const std::string &op, const char *const *names) {
  const TensorType &dy = ctx.operands[0];
  const TensorType &x = ctx.operands[1];
  if (auto msg = checkBatchNormInput(op, x)) return ctx.fail(*msg, {1});
  if (!typesAgree(dy, x))
    return ctx.fail(op + " dy " + dy.str() + " does not match input " + x.str(), {0, 1});
  if (Error e = checkPerChannel(ctx, op, names, 1, 2, 5)) return e;
  TensorType perChannel(statisticsType(x.dtype), {x.dims[1]});
  ctx.results = {x, perChannel, perChannel};
  return Error::success();
}

// The names of the backward ops' operands, by operand index.
const char *const kBatchNormBackwardOperands[] = {"dy", "x", "gamma", "mean", "invstd"};
const char *const kBatchNormBackwardFrozenOperands[] = {"dy", "x", "gamma", "mean", "var"};

Error inferBatchNormBackward(InferCtx &ctx) {
  return inferBatchNormGrad(ctx, "batchnorm_backward", kBatchNormBackwardOperands);
}

Error inferBatchNormBackwardFrozen(InferCtx &ctx) {
  const std::string op = "batchnorm_backward_frozen";
  if (!(ctx.attrs.getFloat("eps") > 0)) return ctx.fail(op + " eps must be positive");
  return inferBatchNormGrad(ctx, op, kBatchNormBackwardFrozenOperands);
}

// Fails when a gradient is asked for batchnorm's statistics operands (3, 4),
// which are buffers: the backward ops compute dx, dgamma and dbeta only.
Error checkStatisticsNotNeeded(GradCtx &ctx) {
  if (ctx.needed[3] || ctx.needed[4])
    return ctx.fail("no gradient flows into batchnorm's mean and variance operands; make them "
                    "buffers (not trainable)");
  return Error::success();
}

// Stores the results dx, dgamma, dbeta of a backward op where needed; an
// empty `r` is the builder's failure.
Error takeBatchNormGrads(GradCtx &ctx, const std::vector<Value *> &r) {
  if (r.empty()) return ctx.b.takeError();
  for (int i = 0; i < 3; ++i)
    if (ctx.needed[i]) ctx.dx[i] = r[i];
  return Error::success();
}

// Inference form: the statistics are constants, so dx = dy * gamma /
// sqrt(var + eps), dgamma = sum(dy * xhat), dbeta = sum(dy) per channel (dy
// taken back through a fused activation first).
Error gradBatchNorm(GradCtx &ctx) {
  if (!ctx.dy[0]) return Error::success();
  if (Error e = checkStatisticsNotNeeded(ctx)) return e;
  const Op &op = ctx.op;
  Value *dy = preActivationGradient(ctx, ctx.dy[0]);
  if (!dy) return ctx.b.takeError();
  auto r = ctx.b.create("batchnorm_backward_frozen",
                        {dy, op.operand(0), op.operand(1), op.operand(3), op.operand(4)},
                        attrs({{"eps", op.attrs().getFloat("eps")}}));
  return takeBatchNormGrads(ctx, r);
}

// sync=true: the batch statistics (and, in the gradient, their sums) are
// reduced over the ranks of a data-parallel run, so the batch is the global
// one (the sync-batchnorm pass sets it).
AttrSpec syncAttr() { return {"sync", AttrKind::Bool, AttrValue(false)}; }

// Training form: the gradient also flows through the batch statistics.
Error gradBatchNormTrain(GradCtx &ctx) {
  if (ctx.dy[1] || ctx.dy[2])
    return ctx.fail("batchnorm_train: gradients of the batch mean and invstd results are not "
                    "supported");
  if (!ctx.dy[0]) return Error::success();
  if (Error e = checkStatisticsNotNeeded(ctx)) return e;
  const Op &op = ctx.op;
  AttrMap attrs;
  if (op.attrs().getBool("sync")) attrs.set("sync", true);
  Value *dy = preActivationGradient(ctx, ctx.dy[0]);
  if (!dy) return ctx.b.takeError();
  auto r = ctx.b.create("batchnorm_backward",
                        {dy, op.operand(0), op.operand(1), op.result(1), op.result(2)},
                        attrs);
  return takeBatchNormGrads(ctx, r);
}

// batchnorm(eps=1e-5, momentum=0.1)
Error buildBatchNorm(LayerCtx &ctx) {
  const TensorType &x = ctx.inputs[0];
  if (auto msg = checkBatchNormInput("batchnorm", x)) return ctx.fail(*msg);
  int64_t c = x.dims[1];
  double eps = ctx.args.getFloat("eps");
  double momentum = ctx.args.getFloat("momentum");
  if (!(eps > 0)) return ctx.fail("batchnorm eps must be positive", "eps");
  if (!(momentum >= 0 && momentum <= 1))
    return ctx.fail("batchnorm momentum must be in [0, 1]", "momentum");
  ctx.attrs.set("eps", eps);
  ctx.attrs.set("momentum", momentum);
  TensorType perChannel(statisticsType(x.dtype), {c});
  ctx.params.push_back({"gamma", perChannel, "ones", true});
  ctx.params.push_back({"beta", perChannel, "zeros", true});
  ctx.params.push_back({"running_mean", perChannel, "zeros", false});
  ctx.params.push_back({"running_var", perChannel, "ones", false});
  return Error::success();
}

// Operands: buf and value of one floating-point type; momentum in [0, 1].
Error inferMovingAverage(InferCtx &ctx) {
  const TensorType &buf = ctx.operands[0];
  if (!isFloatType(buf.dtype))
    return ctx.fail("moving_average expects a floating-point buffer, got " + buf.str(), {0});
  if (ctx.operands[1] != buf)
    return ctx.fail("moving_average value " + ctx.operands[1].str() + " does not match buffer " +
                        buf.str(),
                    {0, 1});
  double momentum = ctx.attrs.getFloat("momentum");
  if (!(momentum >= 0 && momentum <= 1))
    return ctx.fail("moving_average momentum must be in [0, 1]");
  ctx.results = {};
  return Error::success();
}

// Operand: x of any shape; the result has its type.
Error inferDropout(InferCtx &ctx) {
  const TensorType &x = ctx.operands[0];
  if (!isFloatType(x.dtype))
    return ctx.fail("dropout expects a floating-point input, got " + x.str(), {0});
  double rate = ctx.attrs.getFloat("rate");
  if (!(rate >= 0 && rate < 1)) return ctx.fail("dropout rate must be in [0, 1)");
  ctx.results = {x};
  return Error::success();
}

// At inference dropout passes its input through, so dx = dy.
Error gradDropout(GradCtx &ctx) {
  ctx.dx[0] = ctx.dy[0];
  return Error::success();
}

} // namespace

void registerNormOps(BuiltinOps &t) {
  t.add({
      .name = "batchnorm",
      .summary = "Batch normalization over channel dimension 1 with running mean and variance.",
      .operands = {reusable("x"), {"gamma"}, {"beta"}, {"mean"}, {"var"}},
      .attrs = {{"eps", AttrKind::Float, AttrValue(1e-5)},
                {"momentum", AttrKind::Float, AttrValue(0.1)},
                fusedActivationAttr()},
      .fusion = FusionClass::Opaque,
      .inferShape = inferBatchNorm,
      .macs = nullptr,
      .layer = LayerSpec{1,
                         {{"eps", AttrKind::Float, AttrValue(1e-5)},
                          {"momentum", AttrKind::Float, AttrValue(0.1)}},
                         buildBatchNorm},
      .grad = gradBatchNorm,
      .trainForm = "batchnorm_train",
      .precision = Precision::Follow,
      .floatOperands = {"gamma", "beta", "mean", "var"},
  });
  // Updates running_mean and running_var in place and yields their new
  // versions after y, mean and invstd.
  t.add({
      .name = "batchnorm_train",
      .summary = "Batch normalization with batch statistics; updates the running mean and "
                 "variance in place.",
      .operands = {reusable("x"),
                   {"gamma"},
                   {"beta"},
                   {"running_mean", OperandSpec::Required, Effect::Write},
                   {"running_var", OperandSpec::Required, Effect::Write}},
      .attrs = {{"eps", AttrKind::Float, AttrValue(1e-5)},
                {"momentum", AttrKind::Float, AttrValue(0.1)},
                syncAttr(),
                fusedActivationAttr()},
      .numResults = 3,
      .fusion = FusionClass::Opaque,
      .inferShape = inferBatchNormTrain,
      .macs = nullptr,
      .layer = std::nullopt,
      .grad = gradBatchNormTrain,
      .role = OpRole::Forward,
      .internal = true,
      .precision = Precision::Follow,
      .floatOperands = {"gamma", "beta", "running_mean", "running_var"},
  });
  t.add({
      .name = "batchnorm_backward",
      .summary = "Gradient of batchnorm_train with respect to x, gamma and beta, from the batch "
                 "mean and invstd.",
      .operands = {reusable("dy"), reusable("x"), {"gamma"}, {"mean"}, {"invstd"}},
      .attrs = {syncAttr()},
      .numResults = 3,
      .fusion = FusionClass::Opaque,
      .inferShape = inferBatchNormBackward,
      .macs = nullptr,
      .layer = std::nullopt,
      .role = OpRole::Backward,
      .internal = true,
      .precision = Precision::Follow,
      .floatOperands = {"gamma", "mean", "invstd"},
  });
  t.add({
      .name = "batchnorm_backward_frozen",
      .summary = "Gradient of inference batchnorm (fixed statistics) with respect to x, gamma "
                 "and beta.",
      .operands = {reusable("dy"), reusable("x"), {"gamma"}, {"mean"}, {"var"}},
      .attrs = {{"eps", AttrKind::Float, AttrValue(1e-5)}},
      .numResults = 3,
      .fusion = FusionClass::Opaque,
      .inferShape = inferBatchNormBackwardFrozen,
      .macs = nullptr,
      .layer = std::nullopt,
      .role = OpRole::Backward,
      .internal = true,
      .precision = Precision::Follow,
      .floatOperands = {"gamma", "mean", "var"},
  });
  // What decompose-batchnorm makes of batchnorm_train's update of its
  // running statistics.
  t.add({
      .name = "moving_average",
      .summary = "Moves buf in place toward value: buf = (1 - momentum) * buf + momentum * value "
                 "(a batch norm's running statistics).",
      .operands = {{"buf", OperandSpec::Required, Effect::Write}, {"value"}},
      .attrs = {{"momentum", AttrKind::Float, AttrValue(0.1)}},
      .numResults = 0,
      .fusion = FusionClass::Opaque,
      .inferShape = inferMovingAverage,
      .macs = nullptr,
      .layer = std::nullopt,
      .grad = nullptr,
      .trainForm = "",
      .role = OpRole::Forward,
      .internal = true,
      .precision = Precision::Float,
  });
  // What fold-batchnorm puts before a convolution or dense layer whose
  // result only an inference batchnorm reads: s = gamma / sqrt(var + eps),
  // weight' = weight * s along dim 0, bias' = (bias - mean) * s + beta.
  t.add({
      .name = "batchnorm_fold",
      .summary = "Folds an inference batchnorm into the weight and bias of the convolution or "
                 "dense layer before it.",
      .operands = {{"weight"}, {"gamma"}, {"beta"}, {"mean"}, {"var"},
                   {"bias", OperandSpec::Optional}},
      .attrs = {{"eps", AttrKind::Float, AttrValue(1e-5)}},
      .numResults = 2,
      .fusion = FusionClass::Opaque,
      .inferShape = inferBatchNormFold,
      .macs = nullptr,
      .layer = std::nullopt,
      .role = OpRole::Forward,
      .internal = true,
      .precision = Precision::Follow,
      .floatOperands = {"gamma", "beta", "mean", "var"},
  });
  // Dropout draws random numbers in training, so two dropouts of one value
  // must not merge.
  t.add({
      .name = "dropout",
      .summary = "Dropout: the identity at inference; its training form dropout_train zeroes "
                 "elements.",
      .operands = {reusable("x")},
      .attrs = {{"rate", AttrKind::Float, AttrValue(0.5)}},
      .fusion = FusionClass::Elementwise,
      .random = true,
      .inferShape = inferDropout,
      .macs = nullptr,
      .layer = std::nullopt,
      .grad = gradDropout,
      .trainForm = "dropout_train",
      .precision = Precision::Follow,
  });
}

} // namespace dtnn::ir
