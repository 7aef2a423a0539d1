// Optimizer update ops: each updates a parameter and its state buffers in
// place from the parameter's gradient, the learning rate and the step count.
// They have no results of their own: they yield the new versions of the
// parameter and of each state buffer, and writing in place keeps passes
// from removing or merging them.
// Operands: param, grad, lr (a scalar f32[] or f64[]), then step (a scalar
// i64[], the 1-based update count) for the optimizers that need it, then the
// state buffers. The semantics are torch.optim's, hyperparameters included.
// SGD, Adam and AdamW also declare `<opt>_coefficients`, the per-step
// scalars of their fused form (a fused_update, made by fuse-updates).
#include "ir/OpTable.h"
#include "ir/ops/ShapeUtil.h"

#include <algorithm>
#include <cmath>
#include <functional>

namespace dtnn::ir {

namespace {

// What one update op checks beyond its operand types. `opt` is the update
// op's name, which messages print (sgd_update, adam_update, ...).
using HyperCheck = std::function<Error(InferCtx &ctx, const std::string &opt)>;

// Fails unless attribute `name` is finite and at least 0.
Error checkNonNegative(InferCtx &ctx, const std::string &opt, const std::string &name) {
  double v = ctx.attrs.getFloat(name);
  if (std::isfinite(v) && v >= 0) return Error::success();
  return ctx.fail(opt + " " + name + " must be finite and at least 0, got " + formatDouble(v));
}

// Fails unless attribute `name` is finite and positive.
Error checkPositive(InferCtx &ctx, const std::string &opt, const std::string &name) {
  double v = ctx.attrs.getFloat(name);
  if (std::isfinite(v) && v > 0) return Error::success();
  return ctx.fail(opt + " " + name + " must be finite and positive, got " + formatDouble(v));
}

// Fails unless attribute `name` lies in [0, 1), or [0, 1] with `closed`.
Error checkUnit(InferCtx &ctx, const std::string &opt, const std::string &name, bool closed) {
  double v = ctx.attrs.getFloat(name);
  if (v >= 0 && (closed ? v <= 1 : v < 1)) return Error::success();
  return ctx.fail(opt + " " + name + " must be in [0, 1" + (closed ? "]" : ")") + ", got " +
                  formatDouble(v));
}

// The checks shared by the Adam family: betas, eps and weight decay.
Error checkAdamFamily(InferCtx &ctx, const std::string &opt) {
  if (Error e = checkUnit(ctx, opt, "beta1", false)) return e;
  if (Error e = checkUnit(ctx, opt, "beta2", false)) return e;
  if (Error e = checkPositive(ctx, opt, "eps")) return e;
  return checkNonNegative(ctx, opt, "weight_decay");
}

Error checkSgd(InferCtx &ctx, const std::string &opt) {
  if (Error e = checkNonNegative(ctx, opt, "momentum")) return e;
  if (Error e = checkNonNegative(ctx, opt, "weight_decay")) return e;
  double dampening = ctx.attrs.getFloat("dampening");
  if (!std::isfinite(dampening))
    return ctx.fail(opt + " dampening must be a finite number, got " + formatDouble(dampening));
  if (ctx.attrs.getBool("nesterov") && (ctx.attrs.getFloat("momentum") == 0 || dampening != 0))
    return ctx.fail(opt + " nesterov needs a momentum above 0 and dampening 0");
  return Error::success();
}

Error checkRmsprop(InferCtx &ctx, const std::string &opt) {
  if (Error e = checkUnit(ctx, opt, "alpha", true)) return e;
  if (Error e = checkPositive(ctx, opt, "eps")) return e;
  if (Error e = checkNonNegative(ctx, opt, "weight_decay")) return e;
  return checkNonNegative(ctx, opt, "momentum");
}

Error checkNadam(InferCtx &ctx, const std::string &opt) {
  if (Error e = checkAdamFamily(ctx, opt)) return e;
  return checkNonNegative(ctx, opt, "momentum_decay");
}

// The operand list of an update op given which optional parts it has.
struct UpdateLayout {
  bool step = false;                    // a step operand follows lr
  std::vector<std::string> states;      // state buffers, in order
  std::vector<std::string> scalarState; // the states that are rank-0
};

// Checks the types of an update op's operands against `layout`.
Error checkUpdateOperands(InferCtx &ctx, const std::string &op, const UpdateLayout &layout) {
  const auto &ops = ctx.operands;
  size_t expected = 3 + (layout.step ? 1 : 0) + layout.states.size();
  if (ops.size() != expected) {
    std::string names = "param, grad, lr";
    if (layout.step) names += ", step";
    for (const std::string &s : layout.states) names += ", " + s;
    return ctx.fail(op + " with these attributes takes " + std::to_string(expected) +
                    " operands (" + names + "), got " + std::to_string(ops.size()));
  }
  const TensorType &p = ops[0];
  if (!isFloatType(p.dtype))
    return ctx.fail(op + " expects a floating-point param, got " + p.str(), {0});
  if (ops[1] != p)
    return ctx.fail(op + " grad " + ops[1].str() + " does not match param " + p.str(), {0, 1});
  if (ops[2].rank() != 0 || !isFloatType(ops[2].dtype))
    return ctx.fail(op + " lr must be a scalar f32[] or f64[], got " + ops[2].str(), {2});
  int at = 3;
  if (layout.step) {
    if (ops[3].rank() != 0 || ops[3].dtype != DType::I64)
      return ctx.fail(op + " step must be a scalar i64[], got " + ops[3].str(), {3});
    ++at;
  }
  for (const std::string &s : layout.states) {
    bool scalar = std::find(layout.scalarState.begin(), layout.scalarState.end(), s) !=
                  layout.scalarState.end();
    TensorType want = scalar ? TensorType(p.dtype, {}) : p;
    if (ops[at] != want)
      return ctx.fail(op + " " + s + " must be " + want.str() + " to match param " + p.str() +
                          ", got " + ops[at].str(),
                      {0, at});
    ++at;
  }
  return Error::success();
}

using LayoutFn = std::function<UpdateLayout(const AttrMap &)>;

// A shape rule from a layout function (the layout may depend on attributes)
// and the hyperparameter checks.
ShapeFn updateShape(std::string opt, LayoutFn layout, HyperCheck check) {
  return
      [op = opt + "_update", layout = std::move(layout), check = std::move(check)](InferCtx &ctx) {
        if (Error e = check(ctx, op)) return e;
        if (Error e = checkUpdateOperands(ctx, op, layout(ctx.attrs))) return e;
        ctx.results = {};
        return Error::success();
      };
}

// Binds operands to the declared ones by the layout the attributes give.
std::vector<const OperandSpec *> bindByLayout(const OpDef &def, const UpdateLayout &layout,
                                              size_t n) {
  std::vector<std::string> names = {"param", "grad", "lr"};
  if (layout.step) names.push_back("step");
  names.insert(names.end(), layout.states.begin(), layout.states.end());
  std::vector<const OperandSpec *> specs;
  if (names.size() != n) return specs;
  for (const std::string &name : names)
    for (const OperandSpec &o : def.operands)
      if (o.name == name) specs.push_back(&o);
  return specs;
}

// An update op's entry.
OpDef updateOp(std::string opt, std::string summary, std::vector<OperandSpec> operands,
               std::vector<AttrSpec> attrs, LayoutFn layout, HyperCheck check) {
  return {
      .name = opt + "_update",
      .summary = std::move(summary),
      .operands = std::move(operands),
      .attrs = std::move(attrs),
      .numResults = 0,
      .fusion = FusionClass::Opaque,
      .inferShape = updateShape(opt, layout, std::move(check)),
      .macs = nullptr,
      .layer = std::nullopt,
      .grad = nullptr,
      .trainForm = {},
      .bindOperands = [layout](const OpDef &def, const AttrMap &attrs, size_t n) {
        return bindByLayout(def, layout(attrs), n);
      },
      .role = OpRole::Update,
      .internal = true,
      .precision = Precision::Float,
  };
}

AttrSpec floatAttr(std::string name, double v) { return {std::move(name), AttrKind::Float, v}; }

// An operand the update op writes in place: the parameter and each state buffer.
OperandSpec written(std::string name, OperandSpec::Arity arity = OperandSpec::Required) {
  return {std::move(name), arity, Effect::Write};
}

AttrSpec boolAttr(std::string name) { return {std::move(name), AttrKind::Bool, AttrValue(false)}; }

// The attributes of the Adam family with the given weight decay default.
std::vector<AttrSpec> adamAttrs(double weightDecay) {
  return {floatAttr("beta1", 0.9), floatAttr("beta2", 0.999), floatAttr("eps", 1e-8),
          floatAttr("weight_decay", weightDecay)};
}

// Adam's and AdamW's: the family's, and amsgrad.
std::vector<AttrSpec> adamAmsgradAttrs(double weightDecay) {
  std::vector<AttrSpec> attrs = adamAttrs(weightDecay);
  attrs.push_back(boolAttr("amsgrad"));
  return attrs;
}

// The operand layouts of the update ops.
UpdateLayout sgdLayout(const AttrMap &a) {
  if (a.getFloat("momentum") == 0) return {};
  return {true, {"momentum_buf"}, {}};
}
UpdateLayout adamLayout(const AttrMap &a) {
  if (a.getBool("amsgrad")) return {true, {"m", "v", "max_v"}, {}};
  return {true, {"m", "v"}, {}};
}
UpdateLayout rmspropLayout(const AttrMap &a) {
  UpdateLayout l{false, {"square_avg"}, {}};
  if (a.getFloat("momentum") != 0) l.states.push_back("momentum_buf");
  if (a.getBool("centered")) l.states.push_back("grad_avg");
  return l;
}
UpdateLayout nadamLayout(const AttrMap &) {
  return {true, {"m", "v", "mu_product"}, {"mu_product"}};
}

// The per-step scalars of an optimizer that has a fused form:
// `<opt>_coefficients %lr, %step` with the update op's attributes yields
// them, named in `results`, as scalars of lr's type, for the region of a
// fused_update (passes/Optimizers.h) to read.
OpDef coefficientsOp(std::string opt, std::string summary, std::vector<AttrSpec> attrs,
                     std::vector<std::string> results, HyperCheck check) {
  unsigned n = static_cast<unsigned>(results.size());
  std::string op = opt + "_coefficients";
  std::string list;
  for (const std::string &r : results) list += (list.empty() ? "" : ", ") + r;
  return {
      .name = op,
      .summary = std::move(summary) + " Results: " + list + ".",
      .operands = {{"lr"}, {"step"}},
      .attrs = std::move(attrs),
      .numResults = n,
      .fusion = FusionClass::Opaque,
      .inferShape =
          [op, n, check = std::move(check)](InferCtx &ctx) {
            if (Error e = check(ctx, op)) return e;
            const TensorType &lr = ctx.operands[0];
            if (lr.rank() != 0 || !isFloatType(lr.dtype))
              return ctx.fail(op + " lr must be a scalar f32[] or f64[], got " + lr.str(), {0});
            if (ctx.operands[1] != TensorType(DType::I64, {}))
              return ctx.fail(op + " step must be a scalar i64[], got " + ctx.operands[1].str(),
                              {1});
            ctx.results.assign(n, lr);
            return Error::success();
          },
      .role = OpRole::Update,
      .internal = true,
      .precision = Precision::Float,
  };
}

} // namespace

void registerOptimizerOps(BuiltinOps &t) {
  constexpr auto Opt = OperandSpec::Optional;
  // PyTorch starts the momentum buffer at the first gradient rather than
  // dampening it, so with momentum the step count is an operand too.
  t.add(updateOp("sgd",
                 "SGD step as torch.optim.SGD; step and momentum_buf are present iff momentum > 0.",
                 {written("param"), {"grad"}, {"lr"}, {"step", Opt}, written("momentum_buf", Opt)},
                 {floatAttr("momentum", 0.0), floatAttr("dampening", 0.0), boolAttr("nesterov"),
                  floatAttr("weight_decay", 0.0)},
                 sgdLayout, checkSgd));
  std::vector<OperandSpec> adamOperands = {written("param"), {"grad"},    {"lr"}, {"step"},
                                           written("m"),     written("v"), written("max_v", Opt)};
  t.add(updateOp("adam",
                 "Adam step as torch.optim.Adam, weight decay added to the gradient; max_v "
                 "(the largest v so far) iff amsgrad.",
                 adamOperands, adamAmsgradAttrs(0.0), adamLayout, checkAdamFamily));
  t.add(updateOp("adamw",
                 "AdamW step as torch.optim.AdamW, with decoupled weight decay; max_v iff amsgrad.",
                 adamOperands, adamAmsgradAttrs(0.01), adamLayout, checkAdamFamily));
  t.add(updateOp("rmsprop",
                 "RMSprop step as torch.optim.RMSprop; momentum_buf iff momentum > 0, grad_avg "
                 "(the mean gradient) iff centered.",
                 {written("param"), {"grad"}, {"lr"}, written("square_avg"),
                  written("momentum_buf", Opt), written("grad_avg", Opt)},
                 {floatAttr("alpha", 0.99), floatAttr("eps", 1e-8), floatAttr("weight_decay", 0.0),
                  floatAttr("momentum", 0.0), boolAttr("centered")},
                 rmspropLayout, checkRmsprop));
  // The coefficients of the optimizers fuse-updates runs as fused_update.
  t.add(coefficientsOp("sgd",
                       "The per-step scalars of sgd_update's fused form: momentum_now and "
                       "keep_now are 0 and 1 on the first step (the buffer starts at the "
                       "gradient), else momentum and 1 - dampening.",
                       {floatAttr("momentum", 0.0), floatAttr("dampening", 0.0),
                        boolAttr("nesterov"), floatAttr("weight_decay", 0.0)},
                       {"lr", "momentum_now", "keep_now", "momentum", "weight_decay"}, checkSgd));
  std::vector<std::string> adamScalars = {"beta1",    "one_minus_beta1", "beta2",
                                          "one_minus_beta2", "eps", "step_size",
                                          "bias_correction2_sqrt", "weight_decay", "decay"};
  t.add(coefficientsOp("adam",
                       "The per-step scalars of adam_update's fused form: step_size is lr / (1 - "
                       "beta1^step), decay 1 (the weight decay is added to the gradient).",
                       adamAmsgradAttrs(0.0), adamScalars, checkAdamFamily));
  t.add(coefficientsOp("adamw",
                       "The per-step scalars of adamw_update's fused form: as Adam's, with "
                       "weight_decay 0 and decay 1 - lr weight_decay (decoupled).",
                       adamAmsgradAttrs(0.01), adamScalars, checkAdamFamily));
  std::vector<AttrSpec> nadamAttrs = adamAttrs(0.0);
  nadamAttrs.push_back(floatAttr("momentum_decay", 0.004));
  t.add(updateOp("nadam", "NAdam step as torch.optim.NAdam; mu_product is a scalar starting at 1.",
                 {written("param"), {"grad"}, {"lr"}, {"step"}, written("m"), written("v"),
                  written("mu_product")},
                 std::move(nadamAttrs), nadamLayout, checkNadam));
}

} // namespace dtnn::ir
