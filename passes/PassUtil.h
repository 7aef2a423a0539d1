// Small helpers shared by the passes.
#pragma once

#include "ir/IR.h"

#include <map>
#include <string>

namespace dtnn::passes {

// Use counts as returned by ir::Graph::useCounts().
using UseCounts = std::map<const ir::Value *, unsigned>;

// True when no result of `op` has a use.
bool resultsUnused(const ir::Op &op, const UseCounts &uses);

// Names an op for messages the way the printer shows it, e.g.
// `graph @LeNet, op %3 = dense loc("lenet.dtnn":9:5)`.
std::string describeOp(const ir::Graph &g, const ir::Op &op);

} // namespace dtnn::passes
