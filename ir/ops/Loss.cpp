// Losses and metrics: softmax_cross_entropy, nll_loss, mse_loss, bce_loss,
// their backward ops, and accuracy (top-k). A loss returns a rank-0 scalar of
// the prediction's element type: the mean over the batch for the classifier
// losses, the mean over all elements for mse_loss and bce_loss. Labels are
// i32 class indices and never get a gradient. The classifier losses and
// accuracy leave out the rows whose label is their ignore_index (-100 by
// default, as PyTorch's): the mean is over the other rows, 0 when there are
// none (a batch of padding teaches nothing, and must not stop a run).
#include "ir/Builder.h"
#include "ir/OpTable.h"
#include "ir/ops/ShapeUtil.h"

namespace dtnn::ir {

namespace {

// True when two dimension lists agree in the sense of dimsAgree.
bool compatibleDims(const std::vector<int64_t> &a, const std::vector<int64_t> &b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!dimsAgree(a[i], b[i])) return false;
  return true;
}

// Checks a classifier's operands: 2-d floating-point scores [N,C] with C > 0
// at index `at` and i32 labels [N] at index at+1. `what` names the scores in
// messages.
Error checkClassifier(InferCtx &ctx, const std::string &op, const std::string &what, int at) {
  const TensorType &x = ctx.operands[at];
  const TensorType &label = ctx.operands[at + 1];
  if (x.rank() != 2) return ctx.fail(op + " expects 2-d " + what + " [N,C], got " + x.str(), {at});
  if (!isFloatType(x.dtype))
    return ctx.fail(op + " expects floating-point " + what + ", got " + x.str(), {at});
  if (x.dims[1] == 0)
    return ctx.fail(op + " expects " + what + " with at least one class, got " + x.str(), {at});
  if (label.rank() != 1 || label.dtype != DType::I32)
    return ctx.fail(op + " expects i32 labels [N], got " + label.str(), {at + 1});
  if (!compatibleDims({x.dims[0]}, label.dims))
    return ctx.fail(op + " labels " + label.str() + " do not match the batch of " + what + " " +
                        x.str(),
                    {at, at + 1});
  return Error::success();
}

// Checks a loss's operands: a floating-point prediction at index `at` and a
// target of the same type at index at+1.
Error checkPrediction(InferCtx &ctx, const std::string &op, int at) {
  const TensorType &p = ctx.operands[at];
  const TensorType &t = ctx.operands[at + 1];
  if (!isFloatType(p.dtype))
    return ctx.fail(op + " expects a floating-point prediction, got " + p.str(), {at});
  if (t.dtype != p.dtype || !compatibleDims(p.dims, t.dims))
    return ctx.fail(op + " target " + t.str() + " does not match prediction " + p.str(),
                    {at, at + 1});
  return Error::success();
}

// Checks that operand 0 of a backward op is the scalar gradient of a loss
// whose prediction is operand 1.
Error checkLossGradient(InferCtx &ctx, const std::string &op) {
  const TensorType &dy = ctx.operands[0];
  const TensorType &x = ctx.operands[1];
  if (dy.rank() != 0 || dy.dtype != x.dtype)
    return ctx.fail(op + " expects a scalar gradient " + TensorType(x.dtype, {}).str() + ", got " +
                        dy.str(),
                    {0});
  return Error::success();
}

// Shape rule of a classifier loss: (scores, labels) -> scalar.
ShapeFn classifierLoss(std::string op, std::string what) {
  return [op = std::move(op), what = std::move(what)](InferCtx &ctx) {
    if (Error e = checkClassifier(ctx, op, what, 0)) return e;
    ctx.results = {TensorType(ctx.operands[0].dtype, {})};
    return Error::success();
  };
}

// Shape rule of a classifier loss's backward op: (dy, scores, labels) -> scores.
ShapeFn classifierLossBackward(std::string op, std::string what) {
  return [op = std::move(op), what = std::move(what)](InferCtx &ctx) {
    if (Error e = checkClassifier(ctx, op, what, 1)) return e;
    if (Error e = checkLossGradient(ctx, op)) return e;
    ctx.results = {ctx.operands[1]};
    return Error::success();
  };
}

// Shape rule of an elementwise loss: (prediction, target) -> scalar.
ShapeFn elementLoss(std::string op) {
  return [op = std::move(op)](InferCtx &ctx) {
    if (Error e = checkPrediction(ctx, op, 0)) return e;
    ctx.results = {TensorType(ctx.operands[0].dtype, {})};
    return Error::success();
  };
}

// Shape rule of an elementwise loss's backward op: (dy, prediction, target) -> prediction.
ShapeFn elementLossBackward(std::string op) {
  return [op = std::move(op)](InferCtx &ctx) {
    if (Error e = checkPrediction(ctx, op, 1)) return e;
    if (Error e = checkLossGradient(ctx, op)) return e;
    ctx.results = {ctx.operands[1]};
    return Error::success();
  };
}

// accuracy %logits, %label {k}: the fraction of samples whose label is among
// the k highest scores.
Error inferAccuracy(InferCtx &ctx) {
  if (Error e = checkClassifier(ctx, "accuracy", "logits", 0)) return e;
  int64_t k = ctx.attrs.getInt("k");
  int64_t c = ctx.operands[0].dims[1];
  if (k < 1) return ctx.fail("accuracy k must be at least 1, got " + std::to_string(k));
  if (!isBatchDim(c) && k > c)
    return ctx.fail("accuracy k=" + std::to_string(k) + " exceeds the " + std::to_string(c) +
                        " classes of " + ctx.operands[0].str(),
                    {0});
  ctx.results = {TensorType(ctx.operands[0].dtype, {})};
  return Error::success();
}

// The gradient rule of a loss whose backward op is `backward %dy, %x, %t`.
// The prediction x gets the backward op's result. The second operand gets
// `targetFactor` times it when `targetFactor` is nonzero (mse: -1); labels
// (integers) get no gradient; any other target cannot be differentiated.
GradFn lossGrad(std::string backward, double targetFactor) {
  return [backward = std::move(backward), targetFactor](GradCtx &ctx) {
    if (!ctx.dy[0]) return Error::success();
    const Value *target = ctx.op.operand(1);
    bool targetNeeded = ctx.needed[1] && isFloatType(target->type().dtype);
    if (targetNeeded && targetFactor == 0)
      return ctx.fail(ctx.op.name() + " has no gradient with respect to its target");
    if (!ctx.needed[0] && !targetNeeded) return Error::success();
    // The backward op takes the loss's attributes (ignore_index).
    Value *dx = ctx.b.create1(backward, {ctx.dy[0], ctx.op.operand(0), ctx.op.operand(1)},
                              ctx.op.attrs());
    if (!dx) return ctx.b.takeError();
    if (ctx.needed[0]) ctx.dx[0] = dx;
    if (targetNeeded) {
      ctx.dx[1] = ctx.b.create1("scale", {dx}, attrs({{"factor", targetFactor}}));
      if (!ctx.dx[1]) return ctx.b.takeError();
    }
    return Error::success();
  };
}

// The attribute of the classifier losses and accuracy: the label of rows they leave out.
std::vector<AttrSpec> ignoreIndex() {
  return {{"ignore_index", AttrKind::Int, AttrValue(int64_t{-100})}};
}

// A loss entry: two operands, a scalar result, and a gradient rule.
OpDef lossOp(std::string name, std::string summary, std::vector<OperandSpec> operands,
             ShapeFn shape, GradFn grad, std::vector<AttrSpec> attrs = {}) {
  return {
      .name = std::move(name),
      .summary = std::move(summary),
      .operands = std::move(operands),
      .attrs = std::move(attrs),
      .fusion = FusionClass::Reduce,
      .inferShape = std::move(shape),
      .macs = nullptr,
      .layer = std::nullopt,
      .grad = std::move(grad),
      .trainForm = {},
      .role = OpRole::Metric,
      .precision = Precision::Float,
  };
}

// A loss's backward entry: (dy, prediction, target) -> gradient of the prediction.
OpDef backwardOp(std::string name, std::string summary, std::vector<OperandSpec> operands,
                 ShapeFn shape, std::vector<AttrSpec> attrs = {}) {
  return {
      .name = std::move(name),
      .summary = std::move(summary),
      .operands = std::move(operands),
      .attrs = std::move(attrs),
      .fusion = FusionClass::Opaque,
      .inferShape = std::move(shape),
      .macs = nullptr,
      .layer = std::nullopt,
      .grad = nullptr,
      .trainForm = {},
      .role = OpRole::Backward,
      .internal = true,
      .precision = Precision::Float,
  };
}

} // namespace

void registerLossOps(BuiltinOps &t) {
  t.add(lossOp("softmax_cross_entropy",
               "Mean over the rows whose label is not ignore_index of -log softmax(logits)[label], "
               "computed stably.",
               {{"logits"}, {"label"}}, classifierLoss("softmax_cross_entropy", "logits"),
               lossGrad("softmax_cross_entropy_backward", 0), ignoreIndex()));
  t.add(backwardOp("softmax_cross_entropy_backward",
                   "Gradient of softmax_cross_entropy: (softmax(logits) - onehot(label)) * dy / "
                   "(rows counted), zero in the rows of ignore_index.",
                   {{"dy"}, {"logits"}, {"label"}},
                   classifierLossBackward("softmax_cross_entropy_backward", "logits"),
                   ignoreIndex()));
  t.add(lossOp("nll_loss",
               "Mean over the rows whose label is not ignore_index of -logp[n, label[n]] for "
               "log-probabilities logp.",
               {{"logp"}, {"label"}}, classifierLoss("nll_loss", "log-probabilities"),
               lossGrad("nll_loss_backward", 0), ignoreIndex()));
  t.add(backwardOp("nll_loss_backward",
                   "Gradient of nll_loss: -dy / (rows counted) at each counted row's label, zero "
                   "elsewhere.",
                   {{"dy"}, {"logp"}, {"label"}},
                   classifierLossBackward("nll_loss_backward", "log-probabilities"),
                   ignoreIndex()));
  t.add(lossOp("mse_loss", "Mean over all elements of (pred - target)^2.", {{"pred"}, {"target"}},
               elementLoss("mse_loss"), lossGrad("mse_loss_backward", -1)));
  t.add(backwardOp("mse_loss_backward",
                   "Gradient of mse_loss with respect to pred: 2 * (pred - target) * dy / numel.",
                   {{"dy"}, {"pred"}, {"target"}}, elementLossBackward("mse_loss_backward")));
  t.add(lossOp("bce_loss",
               "Mean binary cross-entropy of probabilities against targets, logs clamped at -100.",
               {{"prob"}, {"target"}}, elementLoss("bce_loss"), lossGrad("bce_loss_backward", 0)));
  t.add(backwardOp(
      "bce_loss_backward",
      "Gradient of bce_loss: dy * (prob - target) / max(prob * (1 - prob), 1e-12) / numel.",
      {{"dy"}, {"prob"}, {"target"}}, elementLossBackward("bce_loss_backward")));
  // A sample counts as correct when fewer than k classes score strictly
  // higher than its label, so ties with the label's score count in its favour.
  t.add({
      .name = "accuracy",
      .summary = "Fraction of the rows whose label is not ignore_index with fewer than k classes "
                 "scoring strictly above the label.",
      .operands = {{"logits"}, {"label"}},
      .attrs = {{"k", AttrKind::Int, AttrValue(int64_t{1})},
                {"ignore_index", AttrKind::Int, AttrValue(int64_t{-100})}},
      .fusion = FusionClass::Reduce,
      .inferShape = inferAccuracy,
      .macs = nullptr,
      .layer = std::nullopt,
      .grad = nullptr,
      .trainForm = {},
      .role = OpRole::Metric,
      .precision = Precision::Float,
  });
}

} // namespace dtnn::ir
