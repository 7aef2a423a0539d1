#include "ir/ops/FusedActivation.h"

#include "ir/Builder.h"
#include "ir/IR.h"
#include "ir/ops/ShapeUtil.h"

#include <algorithm>

namespace dtnn::ir {

const std::vector<std::string> &fusableActivations() {
  static const std::vector<std::string> acts = {"relu", "relu6", "sigmoid", "tanh"};
  return acts;
}

bool isFusableActivation(const std::string &name) {
  const auto &a = fusableActivations();
  return std::find(a.begin(), a.end(), name) != a.end();
}

AttrSpec fusedActivationAttr() { return {"act", AttrKind::String, AttrValue(std::string("none"))}; }

Error checkFusedActivation(InferCtx &ctx, const std::string &op, DType result) {
  const AttrValue *v = ctx.attrs.find("act");
  if (!v) return Error::success();
  const std::string &act = ctx.attrs.getString("act");
  if (act == "none") return Error::success();
  if (isFusableActivation(act)) {
    if (isFloatType(result)) return Error::success();
    return ctx.fail(op + " act=\"" + act + "\" needs a floating-point result, got " +
                    std::string(dtypeName(result)));
  }
  std::string known;
  for (const std::string &a : fusableActivations()) known += ", \"" + a + "\"";
  return ctx.fail(op + " act must be \"none\"" + known + "; got \"" + act + "\"");
}

std::string fusedActivationOf(const Op &op) {
  if (!op.attrs().find("act")) return "";
  const std::string &act = op.attrs().getString("act");
  return act == "none" ? "" : act;
}

bool takesFusedActivation(const OpDef &def) { return def.findAttr("act") != nullptr; }

Op *unfusedProducerOf(const Value *v) {
  Op *p = v->definingOp();
  if (!p || p->result(0) != v || !takesFusedActivation(p->def()) || !isFloatType(v->type().dtype))
    return nullptr;
  return fusedActivationOf(*p).empty() ? p : nullptr;
}

Op *unfusedLayerOf(const Value *v) {
  Op *p = unfusedProducerOf(v);
  return p && (p->name() == "conv2d" || p->name() == "dense") && !hasResidual(*p) ? p : nullptr;
}

AttrSpec residualAttr() { return {"residual", AttrKind::Bool, AttrValue(false)}; }

bool hasResidual(const Op &op) {
  const AttrValue *v = op.attrs().find("residual");
  return v && std::get<bool>(*v);
}

size_t layerOperandCount(const Op &op) {
  return op.operands().size() - (hasResidual(op) ? 1 : 0);
}

std::string fusedEpilogueSuffix(const Op &op) {
  std::string act = fusedActivationOf(op);
  return std::string(hasResidual(op) ? "+add" : "") + (act.empty() ? "" : "+" + act);
}

std::string kernelLabel(const Op &op) {
  std::string label = op.name() + fusedEpilogueSuffix(op);
  if (!op.body()) return label;
  std::string inner;
  for (const auto &b : op.body()->ops()) inner += (inner.empty() ? "" : "+") + kernelLabel(*b);
  return label + "(" + inner + ")";
}

AttrMap withoutFusedActivation(AttrMap attrs) {
  attrs.erase("act");
  attrs.erase("residual");
  return attrs;
}

Value *preActivationGradient(GradCtx &ctx, Value *dy) {
  std::string act = fusedActivationOf(ctx.op);
  if (act.empty()) return dy;
  return ctx.b.create1(act + "_backward", {dy, ctx.op.result(0)});
}

} // namespace dtnn::ir
