#include "ir/OpTable.h"

#include "ir/InitSpec.h"

#include "ir/OpRegistry.h"

#include "ir/IR.h"
#include "ir/Registry.h"
#include "ir/RunSettings.h"

#include <cassert>
#include <climits>

namespace dtnn::ir {

const char *fusionClassName(FusionClass f) {
  switch (f) {
  case FusionClass::Elementwise: return "elementwise";
  case FusionClass::Broadcast: return "broadcast";
  case FusionClass::Reduce: return "reduce";
  case FusionClass::Opaque: return "opaque";
  }
  return "?";
}

const char *opRoleName(OpRole role) {
  switch (role) {
  case OpRole::Forward: return "forward";
  case OpRole::Backward: return "backward";
  case OpRole::Update: return "update";
  case OpRole::Metric: return "metric";
  }
  return "?";
}

const char *precisionName(Precision p) {
  switch (p) {
  case Precision::Undeclared: return "undeclared";
  case Precision::Low: return "low";
  case Precision::Follow: return "follow";
  case Precision::Float: return "float";
  }
  return "?";
}

const AttrSpec *OpDef::findAttr(const std::string &n) const {
  for (const auto &a : attrs)
    if (a.name == n) return &a;
  return nullptr;
}

unsigned OpDef::minOperands() const {
  unsigned n = 0;
  for (const auto &o : operands)
    if (o.arity == OperandSpec::Required) ++n;
  return n;
}

unsigned OpDef::maxOperands() const {
  unsigned n = 0;
  for (const auto &o : operands) {
    if (o.arity == OperandSpec::Variadic) return UINT_MAX;
    ++n;
  }
  return n;
}

std::vector<const OperandSpec *> OpDef::operandSpecs(size_t n, const AttrMap &attrs) const {
  assert(n >= minOperands() && n <= maxOperands() && "operand count out of range");
  std::vector<const OperandSpec *> specs;
  if (bindOperands) {
    AttrMap full = attrs;
    fillDefaultAttrs(*this, full);
    specs = bindOperands(*this, full, n);
    if (specs.size() == n) return specs;
    specs.clear();
  }
  size_t optionalLeft = n - minOperands();
  for (const auto &o : operands) {
    if (o.arity == OperandSpec::Optional && optionalLeft == 0) continue;
    if (o.arity == OperandSpec::Optional) --optionalLeft;
    if (o.arity == OperandSpec::Variadic)
      while (specs.size() < n) specs.push_back(&o);
    else
      specs.push_back(&o);
  }
  return specs;
}

unsigned OpDef::resultCount(size_t n, const AttrMap &attrs) const {
  unsigned count = numResults;
  for (const OperandSpec *o : operandSpecs(n, attrs))
    if (o->writes()) ++count;
  return count;
}

bool OpDef::writesOperands() const {
  for (const auto &o : operands)
    if (o.writes()) return true;
  return false;
}

namespace {
OpTable &table() {
  static OpTable t;
  return t;
}
} // namespace

const OpTable &OpTable::get() { return table(); }

struct OpTableAccess {
  static Error add(OpDef def, const std::string &origin) {
    auto &ops = table().ops_;
    if (auto it = ops.find(def.name); it != ops.end())
      return Error::make(duplicateMessage("op", def.name, it->second.origin, origin));
    if (def.name.empty()) return Error::make(origin + " registers an op without a name");
    if (!def.inferShape)
      return Error::make("op '" + def.name + "' of " + origin + " has no shape rule");
    std::string name = def.name;
    ops.emplace(name, OpTable::Entry{std::make_unique<OpDef>(std::move(def)), origin});
    return Error::success();
  }
};

Error registerOp(OpDef def, const std::string &origin) {
  return OpTableAccess::add(std::move(def), origin);
}

void BuiltinOps::add(OpDef def) {
  Error e = registerOp(std::move(def), kBuiltinOrigin);
  if (e && failure_.empty()) failure_ = e.message();
}

Error registerBuiltinOps() {
  static bool done = false;
  if (done) return Error::success();
  done = true;
  if (Error e = registerInitDefaults()) return e;
  if (Error e = registerPrecisionChoices()) return e;
  BuiltinOps t;
  registerConvOps(t);
  registerDenseOps(t);
  registerMatmulOps(t);
  registerAttentionOps(t);
  registerPoolOps(t);
  registerNormOps(t);
  registerLayerNormOps(t);
  registerShapeOps(t);
  registerElementwiseOps(t);
  registerMathOps(t);
  registerReduceOps(t);
  registerActivationOps(t);
  registerDropoutOps(t);
  registerEncodingOps(t);
  registerLossOps(t);
  registerOptimizerOps(t);
  registerCollectiveOps(t);
  registerFusedOps(t);
  registerCastOps(t);
  return t.failure().empty() ? Error::success() : Error::make(t.failure());
}

const OpDef *OpTable::lookup(const std::string &name) const {
  auto it = ops_.find(name);
  return it == ops_.end() ? nullptr : it->second.def.get();
}

std::string OpTable::origin(const std::string &name) const {
  auto it = ops_.find(name);
  return it == ops_.end() ? "" : it->second.origin;
}

std::vector<const OpDef *> OpTable::all() const {
  std::vector<const OpDef *> out;
  for (const auto &[name, e] : ops_) out.push_back(e.def.get());
  return out;
}

std::vector<std::string> OpTable::names() const {
  std::vector<std::string> out;
  for (const auto &[name, e] : ops_) out.push_back(name);
  return out;
}

} // namespace dtnn::ir
