// Dropout in training: dropout_train draws a deterministic mask from a
// counter-based hash of (seed, step, element index), so a train step is
// reproducible and its result does not depend on the thread count. Stochastic
// depth (drop_path) drops whole samples the same way, one draw a sample.
#include "ir/Builder.h"
#include "ir/OpTable.h"
#include "ir/ops/ShapeUtil.h"

namespace dtnn::ir {

namespace {

// Operands: x (floating point, any shape) and step (the i64[] step count);
// results y and mask, both of x's type.
Error inferDropoutTrain(InferCtx &ctx) {
  const TensorType &x = ctx.operands[0];
  const TensorType &step = ctx.operands[1];
  if (!isFloatType(x.dtype))
    return ctx.fail("dropout_train expects a floating-point input, got " + x.str(), {0});
  if (step.rank() != 0 || step.dtype != DType::I64)
    return ctx.fail("dropout_train step must be an i64[] scalar, got " + step.str(), {1});
  double rate = ctx.attrs.getFloat("rate");
  if (!(rate >= 0 && rate < 1)) return ctx.fail("dropout_train rate must be in [0, 1)");
  ctx.results = {x, x};
  return Error::success();
}

// drop_path: the identity at inference, for x [N, ...] of floats.
Error inferDropPath(InferCtx &ctx) {
  const TensorType &x = ctx.operands[0];
  if (!isFloatType(x.dtype) || x.rank() == 0)
    return ctx.fail("drop_path expects floats with a sample dimension, got " + x.str(), {0});
  double rate = ctx.attrs.getFloat("rate");
  if (!(rate >= 0 && rate < 1)) return ctx.fail("drop_path rate must be in [0, 1)");
  ctx.results = {x};
  return Error::success();
}

// drop_path_train: x and the i64[] step; results y and the mask, both of x's type.
Error inferDropPathTrain(InferCtx &ctx) {
  const TensorType &step = ctx.operands[1];
  if (step.rank() != 0 || step.dtype != DType::I64)
    return ctx.fail("drop_path_train step must be an i64[] scalar, got " + step.str(), {1});
  if (Error e = inferDropPath(ctx)) return e;
  ctx.results = {ctx.operands[0], ctx.operands[0]};
  return Error::success();
}

// At inference drop_path passes its input through, so dx = dy.
Error gradDropPath(GradCtx &ctx) {
  ctx.dx[0] = ctx.dy[0];
  return Error::success();
}

// y = x * mask, and the mask does not depend on x: dx = dy * mask.
Error gradDropoutTrain(GradCtx &ctx) {
  if (!ctx.dy[0] || !ctx.needed[0]) return Error::success();
  ctx.dx[0] = ctx.b.create1("mul", {ctx.dy[0], ctx.op.result(1)});
  if (!ctx.dx[0]) return ctx.b.takeError();
  return Error::success();
}

} // namespace

void registerDropoutOps(BuiltinOps &t) {
  t.add({
      .name = "dropout_train",
      .summary = "Keeps each element with probability 1-rate, scaled by 1/(1-rate), using a mask "
                 "hashed from (seed, step, index); returns y and the mask.",
      .operands = {reusable("x"), {"step"}},
      .attrs = {{"rate", AttrKind::Float, AttrValue(0.5)},
                {"seed", AttrKind::Int, AttrValue(int64_t{0})}},
      .numResults = 2,
      .fusion = FusionClass::Elementwise,
      .random = true,
      .inferShape = inferDropoutTrain,
      .macs = nullptr,
      .layer = std::nullopt,
      .grad = gradDropoutTrain,
      .role = OpRole::Forward,
      .internal = true,
      .precision = Precision::Follow,
  });
  // Stochastic depth (torchvision's StochasticDepth, mode "row"): in a residual branch, a
  // sample's whole branch is dropped with probability rate, and kept ones are scaled.
  t.add({
      .name = "drop_path",
      .summary = "Stochastic depth: the identity at inference; its training form drop_path_train "
                 "zeroes whole samples.",
      .operands = {reusable("x")},
      .attrs = {{"rate", AttrKind::Float, AttrValue(0.1)}},
      .fusion = FusionClass::Elementwise,
      .random = true,
      .inferShape = inferDropPath,
      .macs = nullptr,
      .layer = std::nullopt,
      .grad = gradDropPath,
      .trainForm = "drop_path_train",
      .precision = Precision::Follow,
  });
  t.add({
      .name = "drop_path_train",
      .summary = "Keeps each sample (all of x[n]) with probability 1-rate, scaled by 1/(1-rate), "
                 "using a draw hashed from (seed, step, sample); returns y and the mask.",
      .operands = {reusable("x"), {"step"}},
      .attrs = {{"rate", AttrKind::Float, AttrValue(0.1)},
                {"seed", AttrKind::Int, AttrValue(int64_t{0})}},
      .numResults = 2,
      .fusion = FusionClass::Elementwise,
      .random = true,
      .inferShape = inferDropPathTrain,
      .macs = nullptr,
      .layer = std::nullopt,
      .grad = gradDropoutTrain,
      .role = OpRole::Forward,
      .internal = true,
      .precision = Precision::Follow,
  });
}

} // namespace dtnn::ir
