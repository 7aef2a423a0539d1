// The optimizers a train step can use, an open registry: registering one
// (registerOptimizer) adds its choice to the run-settings schema and what the
// train step needs to update a parameter with it; reading the choice and its
// hyperparameters from a module's train settings; and emitting one
// parameter's update op (`<name>_update`, ir/ops/Optimizer.cpp for the
// built-in ones) together with the state buffers it keeps between steps.
#pragma once

#include "ir/Builder.h"
#include "ir/Error.h"
#include "ir/IR.h"
#include "ir/RunSettings.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace dtnn::passes {

// A state buffer an optimizer keeps per parameter: the state operand of its
// update op it feeds, the suffix of its name (`<param>.<suffix>`), its
// initializer, and whether it is a scalar (else it has the parameter's type).
struct OptimizerState {
  std::string operand;
  std::string suffix;
  std::string init = "zeros";
  bool scalar = false;
};

// The fused form of an optimizer's update, which fuse-updates runs as one
// fused_update per bucket of gradients: the op that yields the per-step
// coefficients (`<name>_coefficients`, in the op table, taking lr and step
// and the update op's attributes) and the region of one parameter's update.
// `build` appends through `b` the update of the elements of `tensors` (the
// region's arguments: param, grad, then the update op's state buffers in its
// operand order) from `coefficients` (the region's arguments standing for
// the coefficients op's results, in order), and returns the new param and
// states in that order. `applies` says whether an update with these
// attributes has the form (AMSGrad's running maximum has none).
struct FusedUpdateForm {
  std::string coefficientsOp;
  std::function<Expected<std::vector<ir::Value *>>(
      ir::Builder &b, const ir::AttrMap &attrs, const std::vector<ir::Value *> &tensors,
      const std::vector<ir::Value *> &coefficients)>
      build;
  std::function<bool(const ir::AttrMap &attrs)> applies;
};

// An optimizer `name`: its update op is `<name>_update`, registered in the op
// table before the optimizer, whose attributes are the hyperparameters (names,
// kinds, defaults) and whose shape rule checks their values. The optimizer's
// choice in the run-settings schema takes `lr`, then `args`, then those
// attributes.
struct OptimizerDef {
  std::string name;
  std::string summary; // one line, for the printed schema
  // Arguments besides lr and the update op's attributes: `betas` (a list of
  // two numbers) sets beta1 and beta2.
  std::vector<ir::ChoiceArg> args;
  // The buffer of each state operand the update op writes, besides the parameter.
  std::vector<OptimizerState> states;
  bool isDefault = false; // the optimizer of a run that names none
  std::optional<FusedUpdateForm> fused; // none: its updates run one by one
};

// The optimizer whose update op is `updateOp`, or null.
const OptimizerDef *findOptimizerOfUpdate(const std::string &updateOp);

// Registers an optimizer; `origin` names the registrant in messages. Fails when
// the name is taken or its update op is not in the op table.
Error registerOptimizer(OptimizerDef def, const std::string &origin);

// Registers the built-in optimizers (once; later calls do nothing).
Error registerBuiltinOptimizers();

// A chosen optimizer: its name and every hyperparameter other than lr (which
// is a runtime input), defaults filled in, as attributes of its update op.
struct OptimizerSpec {
  std::string name;
  ir::AttrMap args;
};

// Reads the `optimizer` setting: its choice and arguments, which the
// run-settings schema declares (ir/RunSettings.h). `lr` is accepted and
// ignored; the Adam family also accepts `betas=[b1, b2]`. Unknown names and
// arguments, values of the wrong kind and out-of-range values are errors.
Expected<OptimizerSpec> readOptimizer(const ir::SettingCall &optimizer);

// Appends the update of `param` through `b`: creates its state buffers in `m`
// as non-trainable parameters named `<param>.<state>` (momentum, adam_m,
// adam_v, adam_max_v, square_avg, grad_avg, mu_product; zeros, mu_product
// ones), reusing ones that
// exist with the same type and initializer, then the update op. `step` may be
// null for optimizers that do not use it.
Error emitUpdate(ir::Module &m, ir::Builder &b, const OptimizerSpec &spec, ir::Param &param,
                 ir::Value *grad, ir::Value *lr, ir::Value *step);

} // namespace dtnn::passes
