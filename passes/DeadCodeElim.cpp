// dce: removes ops whose results are never used.
//
// Algorithm: count the uses of every value (operands of ops and graph
// outputs), then walk each graph's ops backwards. An op that writes no
// operand in place and is no collective, none of whose results is used, is
// dead (an unused random draw may go too); marking it
// dead releases one use of each of its operands, so a whole chain that only
// fed dead ops dies in the same walk. Dead ops are then erased together.
// Module parameters are kept even when no graph reads them: they are
// checkpoint state.
#include "passes/PassRegistry.h"
#include "passes/PassUtil.h"

#include <set>

namespace dtnn::passes {

namespace {

class DeadCodeElimPass final : public GraphPass {
public:
  std::string_view name() const override { return "dce"; }
  std::string_view description() const override {
    return "Removes ops whose results are unused, unless they write in place or are collective.";
  }

  Expected<bool> runOnGraph(ir::Graph &g) override {
    UseCounts uses = g.useCounts();
    std::set<const ir::Op *> dead;
    const auto &ops = g.ops();
    for (size_t i = ops.size(); i-- > 0;) {
      const ir::Op &op = *ops[i];
      const ir::OpDef &def = op.def();
      if (def.writesOperands() || def.collective || !resultsUnused(op, uses)) continue;
      dead.insert(&op);
      for (const ir::Value *v : op.operands()) --uses[v];
    }
    if (dead.empty()) return false;
    g.eraseOpsIf([&](const ir::Op &op) { return dead.count(&op) != 0; });
    return true;
  }
};

} // namespace

std::unique_ptr<Pass> createDeadCodeElimPass() { return std::make_unique<DeadCodeElimPass>(); }

} // namespace dtnn::passes
