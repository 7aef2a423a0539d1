// The fusion target of a run: the backends it plans with, in kernel
// selection's order, asked through the kernel registry which of them would
// claim an op. Fusion passes consult it (passes/FusionTarget.h).
#pragma once

#include "ir/Error.h"
#include "passes/FusionTarget.h"

#include <memory>
#include <string>
#include <vector>

namespace dtnn::runtime {

// The target of a run on backend `name` (empty: the build's default) and the
// fallbacks; an unknown name gets BackendSet's error.
Expected<std::unique_ptr<passes::FusionTarget>> makeFusionTarget(const std::string &name);

} // namespace dtnn::runtime
