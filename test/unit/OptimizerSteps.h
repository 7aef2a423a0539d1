// Three optimizer steps of a module of parameters, for the optimizer tests:
// parameter @w (4 elements, kInitial) updated from gradients kGrads at
// learning rates kLr, optionally beside parameters of other sizes, on the
// unfused update ops or after fuse-updates, on a chosen backend.
#pragma once

#include "ir/Attributes.h"
#include "ir/RunSettings.h"
#include "ir/Types.h"

#include <map>
#include <string>
#include <vector>

namespace dtnn::test {

using Vec = std::vector<double>;

extern const Vec kInitial;
extern const std::vector<Vec> kGrads;
extern const Vec kLr;

// The train settings `optimizer = name(args...)`.
ir::SettingCall config(const std::string &name,
                       std::vector<std::pair<std::string, ir::AttrValue>> args = {});

struct StepOptions {
  std::string backend = "reference";
  // Runs fuse-updates first (asking the backend's fusion target, except the
  // reference one: then the fused_update runs on its interpreter).
  bool fuse = false;
  // More parameters updated beside @w, @u0, @u1, ... of these sizes, their
  // values and gradients a fixed pattern.
  std::vector<int64_t> extra;
};

// Runs three updates and returns every parameter of the module (the
// parameters and their state) by name. With `fuse`, fails the test unless
// the step holds a fused_update.
std::map<std::string, Vec> runSteps(const ir::SettingCall &settings, ir::DType dt = ir::DType::F64,
                                    const StepOptions &o = {});

} // namespace dtnn::test
