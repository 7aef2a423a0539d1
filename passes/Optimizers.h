// The optimizers a train step can use: reading the choice and its
// hyperparameters from a module's train settings, and emitting one
// parameter's update op (`<name>_update`, ir/ops/Optimizer.cpp) together
// with the state buffers it keeps between steps.
#pragma once

#include "ir/Builder.h"
#include "dtnn/Error.h"
#include "ir/IR.h"
#include "ir/RunSettings.h"

#include <string>
#include <vector>

namespace dtnn::passes {

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
