// Helpers shared by the passes.
#include "passes/PassUtil.h"

#include "ir/Printer.h"

namespace dtnn::passes {

bool resultsUnused(const ir::Op &op, const UseCounts &uses) {
  for (const ir::Value *r : op.results()) {
    auto it = uses.find(r);
    if (it != uses.end() && it->second != 0) return false;
  }
  return true;
}

std::string describeOp(const ir::Graph &g, const ir::Op &op) {
  // The printer numbers results %0, %1, ... across the graph's ops in order.
  size_t first = 0;
  for (const auto &o : g.ops()) {
    if (o.get() == &op) break;
    first += o->results().size();
  }
  std::string s = "graph @" + g.name() + ", op ";
  for (size_t i = 0; i < op.results().size(); ++i)
    s += (i ? ", %" : "%") + std::to_string(first + i);
  if (!op.results().empty()) s += " = ";
  s += op.name();
  std::string loc = ir::locationStr(op.loc());
  if (!loc.empty()) s += " " + loc;
  return s;
}

} // namespace dtnn::passes
