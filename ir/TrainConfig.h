// Helpers over a module's train config (ir::Module::trainConfig) shared by
// the passes that build train steps and the runtime that runs them.
#pragma once

#include "ir/Attributes.h"

#include <string>
#include <vector>

namespace dtnn::ir {

// The metrics of the `metrics` setting ("accuracy,top5"), with `accuracy`
// first and always present: the order of a train or eval step's outputs
// after the loss.
std::vector<std::string> trainMetrics(const AttrMap &trainConfig);

} // namespace dtnn::ir
