// The optimizer registry. An optimizer `foo` is the update op `foo_update` of
// the op table: its attributes are the optimizer's hyperparameters (names,
// kinds and defaults come from that entry), and its shape rule checks their
// values, so settings read here and update ops written by hand in IR text
// are held to the same rules. The registration adds what the op table cannot
// know: the names and initial values of the state buffers each optimizer keeps
// per parameter. Which buffers an update takes comes from the op's entry too.
#include "passes/Optimizers.h"

#include "ir/Diagnostics.h"
#include "ir/OpTable.h"
#include "ir/Registry.h"
#include "ir/SettingChoices.h"

#include <algorithm>
#include <cassert>

namespace dtnn::passes {

namespace {

using StateBuffer = OptimizerState;

ir::Registry<OptimizerDef> &optimizers() {
  static ir::Registry<OptimizerDef> registry("optimizer");
  return registry;
}

// The operands the update op of `spec` takes with its attributes, as its
// entry binds them.
std::vector<const ir::OperandSpec *> updateOperands(const OptimizerSpec &spec) {
  const ir::OpDef *def = ir::OpTable::get().lookup(spec.name + "_update");
  if (!def) return {};
  if (!def->bindOperands) return def->operandSpecs(def->minOperands(), spec.args);
  for (size_t n = def->minOperands(); n <= def->maxOperands(); ++n)
    if (auto specs = def->bindOperands(*def, spec.args, n); specs.size() == n) return specs;
  return {};
}

// The state buffers of the update, in operand order.
std::vector<StateBuffer> stateBuffers(const OptimizerSpec &spec) {
  std::vector<StateBuffer> buffers;
  const OptimizerDef *opt = optimizers().find(spec.name);
  std::vector<const ir::OperandSpec *> operands = updateOperands(spec);
  for (size_t i = 1; opt && i < operands.size(); ++i) {
    if (!operands[i]->writes()) continue;
    auto it = std::find_if(opt->states.begin(), opt->states.end(),
                           [&](const StateBuffer &s) { return s.operand == operands[i]->name; });
    assert(it != opt->states.end() && "state operand without a buffer name");
    buffers.push_back(*it);
  }
  return buffers;
}

// Whether the update op takes the step count (SGD with momentum needs it for
// the first step of its momentum buffer).
bool takesStep(const OptimizerSpec &spec) {
  for (const ir::OperandSpec *o : updateOperands(spec))
    if (o->name == "step") return true;
  return false;
}

// The operand types of the update of a parameter of type `param`.
std::vector<ir::TensorType> operandTypes(const OptimizerSpec &spec, const ir::TensorType &param) {
  std::vector<ir::TensorType> types = {param, param, ir::TensorType(ir::DType::F32, {})};
  if (takesStep(spec)) types.push_back(ir::TensorType(ir::DType::I64, {}));
  for (const StateBuffer &s : stateBuffers(spec))
    types.push_back(s.scalar ? ir::TensorType(param.dtype, {}) : param);
  return types;
}

// Runs the update op's shape rule, which checks the hyperparameter values.
Error checkUpdate(const OptimizerSpec &spec, const ir::OpDef &def, const ir::TensorType &param) {
  std::vector<ir::TensorType> types = operandTypes(spec, param);
  ir::InferCtx ctx{types, spec.args, {}, {}};
  return ir::inferResultTypes(def, ctx);
}

// Reads `betas=[b1, b2]` into beta1 and beta2.
Error readBetas(const std::string &name, const ir::AttrValue &v, OptimizerSpec &spec) {
  std::vector<double> betas;
  if (auto *f = std::get_if<std::vector<double>>(&v)) betas = *f;
  if (auto *i = std::get_if<std::vector<int64_t>>(&v)) betas.assign(i->begin(), i->end());
  if (betas.size() != 2)
    return Error::make("optimizer '" + name +
                       "' argument 'betas' must be a list of two numbers, got " +
                       ir::attrValueStr(v));
  spec.args.set("beta1", betas[0]);
  spec.args.set("beta2", betas[1]);
  return Error::success();
}

// The type of state buffer `s` of `param`.
ir::TensorType bufferType(const StateBuffer &s, const ir::Param &param) {
  return s.scalar ? ir::TensorType(param.type.dtype, {}) : param.type;
}

// Fails if a parameter named like one of `param`'s state buffers exists but
// differs from it; such buffers are reused otherwise.
Error checkBuffers(const ir::Module &m, const OptimizerSpec &spec, const ir::Param &param) {
  for (const StateBuffer &s : stateBuffers(spec)) {
    std::string name = param.name + "." + s.suffix;
    ir::TensorType type = bufferType(s, param);
    const ir::Param *old = m.findParam(name);
    if (old && (old->type != type || old->init != s.init || old->trainable))
      return Error::make("state buffer @" + name + " : " + type.str() + " init=" + s.init +
                         " clashes with an existing parameter @" + name + " : " + old->type.str() +
                         " init=" + old->init);
  }
  return Error::success();
}

// The fused forms of the built-in optimizers: the arithmetic of their
// reference kernels (backends/reference/Optimizer.cpp), in the same order of
// operations, so that both round alike; a term whose hyperparameter makes it
// vanish is left out, as those kernels skip it.
using Values = std::vector<ir::Value *>;

// p + wd p where a weight decay is added to the gradient.
ir::Value *withDecay(ir::Builder &b, ir::Value *g, ir::Value *p, ir::Value *wd, bool decays) {
  return decays ? b.create1("add", {g, b.create1("mul", {wd, p})}) : g;
}

// SGD: d = g (+ wd p); without momentum p - lr d; else buf = momentum_now buf
// + keep_now d, and p - lr (nesterov ? d + momentum buf : buf).
Expected<Values> sgdRegion(ir::Builder &b, const ir::AttrMap &a, const Values &t, const Values &c) {
  ir::Value *p = t[0], *lr = c[0];
  ir::Value *d = withDecay(b, t[1], p, c[4], a.getFloat("weight_decay") != 0);
  if (a.getFloat("momentum") == 0) return Values{b.create1("sub", {p, b.create1("mul", {lr, d})})};
  ir::Value *buf = b.create1("add", {b.create1("mul", {c[1], t[2]}), b.create1("mul", {c[2], d})});
  ir::Value *dir = a.getBool("nesterov") ? b.create1("add", {d, b.create1("mul", {c[3], buf})}) : buf;
  return Values{b.create1("sub", {p, b.create1("mul", {lr, dir})}), buf};
}

// Adam and AdamW: g (+ wd p for Adam), m = beta1 m + (1 - beta1) g, v = beta2
// v + (1 - beta2) g g, and p (times decay for AdamW) - step_size m /
// (sqrt(v) / sqrt(1 - beta2^t) + eps).
FusedUpdateForm adamForm(std::string name, bool decoupled) {
  auto build = [decoupled](ir::Builder &b, const ir::AttrMap &a, const Values &t,
                           const Values &c) -> Expected<Values> {
    bool decays = a.getFloat("weight_decay") != 0;
    ir::Value *p = t[0];
    ir::Value *g = withDecay(b, t[1], p, c[7], decays && !decoupled);
    ir::Value *m = b.create1("add", {b.create1("mul", {c[0], t[2]}), b.create1("mul", {c[1], g})});
    ir::Value *gg = b.create1("mul", {b.create1("mul", {c[3], g}), g});
    ir::Value *v = b.create1("add", {b.create1("mul", {c[2], t[3]}), gg});
    ir::Value *denom = b.create1("add", {b.create1("div", {b.create1("sqrt", {v}), c[6]}), c[4]});
    if (decays && decoupled) p = b.create1("mul", {p, c[8]});
    ir::Value *step = b.create1("mul", {c[5], b.create1("div", {m, denom})});
    return Values{b.create1("sub", {p, step}), m, v};
  };
  return {std::move(name) + "_coefficients", build,
          [](const ir::AttrMap &a) { return !a.getBool("amsgrad"); }};
}

} // namespace

const OptimizerDef *findOptimizerOfUpdate(const std::string &updateOp) {
  const std::string suffix = "_update";
  if (!updateOp.ends_with(suffix)) return nullptr;
  return optimizers().find(updateOp.substr(0, updateOp.size() - suffix.size()));
}

Error registerOptimizer(OptimizerDef def, const std::string &origin) {
  const ir::OpDef *update = ir::OpTable::get().lookup(def.name + "_update");
  if (!update)
    return Error::make("optimizer '" + def.name + "' of " + origin + " has no update op '" +
                       def.name + "_update' in the op table");
  ir::SettingChoice choice{def.name, {{"lr", ir::AttrKind::Float}}, def.summary, def.isDefault};
  choice.args.insert(choice.args.end(), def.args.begin(), def.args.end());
  // The other hyperparameters are the attributes of the optimizer's update op.
  for (const ir::AttrSpec &a : update->attrs) choice.args.push_back({a.name, a.kind});
  return ir::registerChoiceEntry(optimizers(), "optimizer", std::move(choice), std::move(def),
                                 origin);
}

Error registerBuiltinOptimizers() {
  static bool done = false;
  if (done) return Error::success();
  done = true;
  using K = ir::AttrKind;
  std::vector<ir::ChoiceArg> betas = {{"betas", K::Floats}};
  OptimizerState momentum{"momentum_buf", "momentum"}, m{"m", "adam_m"}, v{"v", "adam_v"},
      maxV{"max_v", "adam_max_v"};
  FusedUpdateForm sgd{"sgd_coefficients", sgdRegion, [](const ir::AttrMap &) { return true; }};
  std::vector<OptimizerDef> all = {
      {"sgd", "stochastic gradient descent, with optional momentum", {}, {momentum}, true, sgd},
      {"adam", "Adam", betas, {m, v, maxV}, false, adamForm("adam", false)},
      {"adamw", "Adam with decoupled weight decay", betas, {m, v, maxV}, false,
       adamForm("adamw", true)},
      {"rmsprop", "RMSprop", {}, {{"square_avg", "square_avg"}, momentum, {"grad_avg", "grad_avg"}}},
      {"nadam", "Adam with Nesterov momentum", betas, {m, v, {"mu_product", "mu_product", "ones", true}}},
  };
  for (OptimizerDef &d : all)
    if (Error e = registerOptimizer(std::move(d), ir::kBuiltinOrigin)) return e;
  return Error::success();
}

Expected<OptimizerSpec> readOptimizer(const ir::SettingCall &optimizer) {
  const std::string &name = optimizer.name;
  const ir::RunSettingDef &setting = *ir::findRunSetting("optimizer");
  if (Error e = ir::checkSettingChoice(setting, name)) return e;
  const ir::OpDef *def = ir::OpTable::get().lookup(name + "_update");
  if (!def) return Error::make("optimizer " + name + " has no update op in the op table");

  OptimizerSpec spec{name, {}};
  for (const ir::AttrSpec &a : def->attrs)
    if (a.defaultValue) spec.args.set(a.name, *a.defaultValue);
  bool betas = false, beta = false;
  for (const auto &[arg, given] : optimizer.args.entries()) {
    ir::AttrValue v = given;
    if (Error e = ir::checkSettingArg(setting, name, arg, v)) return e;
    betas = betas || arg == "betas";
    beta = beta || arg == "beta1" || arg == "beta2";
    if (arg == "betas") {
      if (Error e = readBetas(name, v, spec)) return e;
    } else if (arg != "lr") { // the rate is a runtime input of the update op
      spec.args.set(arg, std::move(v));
    }
  }
  if (betas && beta)
    return Error::make("optimizer " + name + " takes either betas or beta1 and beta2, not both");
  if (Error e = checkUpdate(spec, *def, ir::TensorType(ir::DType::F32, {1}))) return e;
  return spec;
}

Error emitUpdate(ir::Module &m, ir::Builder &b, const OptimizerSpec &spec, ir::Param &param,
                 ir::Value *grad, ir::Value *lr, ir::Value *step) {
  std::string opName = spec.name + "_update";
  const ir::OpDef *def = ir::OpTable::get().lookup(opName);
  if (!def) return Error::make("unknown optimizer '" + spec.name + "'");
  OptimizerSpec full = spec;
  ir::fillDefaultAttrs(*def, full.args);
  std::string what = "optimizer update of @" + param.name + ": ";
  if (!grad || !lr) return Error::make(what + "missing gradient or learning rate");
  if (takesStep(full) && !step) return Error::make(what + spec.name + " needs the step count");
  // Check before creating buffers so that a failure leaves the module as it was.
  std::vector<ir::TensorType> types = operandTypes(full, param.type);
  types[1] = grad->type();
  types[2] = lr->type();
  if (takesStep(full)) types[3] = step->type();
  ir::InferCtx ctx{types, full.args, {}, {}};
  if (Error e = ir::inferResultTypes(*def, ctx)) return Error::make(what + e.message());
  if (Error e = checkBuffers(m, full, param)) return Error::make(what + e.message());

  std::vector<ir::Value *> operands = {param.value, grad, lr};
  if (takesStep(full)) operands.push_back(step);
  for (const StateBuffer &s : stateBuffers(full)) {
    std::string name = param.name + "." + s.suffix;
    ir::Param *buf = m.findParam(name);
    if (!buf) buf = m.addParam(name, bufferType(s, param), s.init, false, param.loc);
    operands.push_back(buf->value);
  }
  if (!b.createOp(opName, operands, full.args))
    return Error::make(what + b.takeError().message());
  return Error::success();
}

} // namespace dtnn::passes
