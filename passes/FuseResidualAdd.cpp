// fuse-residual-add: folds the residual add of a ResNet block into the
// convolution that feeds it (conv2d's residual=true, its last operand), so
// that one kernel computes act(conv2d(x, w) + b + r) and writes it over r
// where r is not needed after (oneDNN's sum post-op), instead of writing the
// convolution's result and reading it back for the add. It serves the eval
// step, whose batch norms fold-batchnorm has folded into the convolutions; a
// train step keeps a batch norm between the convolution and the add.
//
// Algorithm: for each add A whose operands a and b both have A's result
// type, and one of them, r, is the result of a conv2d P without an
// activation or a residual (ir/ops/FusedActivation.h), used by A alone,
// while the other, s, is defined before P (so that P may read it): append s
// to P's operands, set residual=true and A's activation on P, and keep that
// only if the target runs P where it ran P before (passes/FusionTarget.h);
// then replace A's result by r, merge A's location into P's and erase A.
// When both operands qualify, the later convolution takes the earlier one's
// result as its residual. Each P takes one add, so one sweep reaches the
// fixed point.
#include "ir/UseIndex.h"
#include "ir/ops/FusedActivation.h"
#include "passes/FusionTarget.h"
#include "passes/PassRegistry.h"

#include <set>
#include <unordered_map>

namespace dtnn::passes {

namespace {

class FuseResidualAddPass final : public GraphPass {
public:
  std::string_view name() const override { return "fuse-residual-add"; }
  std::string_view description() const override {
    return "Folds a residual add (and its activation) into the conv2d that feeds it "
           "(residual=true).";
  }
  bool fuses() const override { return true; }

  Expected<bool> runOnGraph(ir::Graph &g) override {
    auto counts = g.useCounts();
    ir::UseIndex index(g);
    // Positions in the op list, which this loop does not change.
    std::unordered_map<const ir::Op *, size_t> position;
    for (const auto &op : g.ops()) position.emplace(op.get(), position.size());
    std::set<const ir::Op *> erased;
    for (const auto &a : g.ops()) {
      if (a->name() != "add") continue;
      ir::Op *p = convTakingResidual(*a, counts, position);
      if (!p) continue;
      ir::Value *r = a->operand(0)->definingOp() == p ? a->operand(0) : a->operand(1);
      ir::Value *s = r == a->operand(0) ? a->operand(1) : a->operand(0);
      std::vector<ir::Value *> before = p->operands(), with = before;
      with.push_back(s);
      ir::AttrMap attrsBefore = p->attrs();
      std::string act = ir::fusedActivationOf(*a);
      auto fuse = [&](ir::Op &op) {
        op.setOperands(with);
        op.attrs().set("residual", true);
        if (!act.empty()) op.attrs().set("act", act);
      };
      auto undo = [&](ir::Op &op) {
        op.setOperands(before);
        op.attrs() = attrsBefore;
      };
      if (!fuseIfSameBackend(target_, *p, fuse, undo)) continue;
      index.addUser(s, p);
      ir::Location loc = p->loc();
      loc.merge(a->loc());
      p->setLoc(loc);
      index.replaceAllUses(a->result(0), r);
      erased.insert(a.get());
    }
    if (!erased.empty()) g.eraseOpsIf([&](const ir::Op &op) { return erased.count(&op) > 0; });
    return !erased.empty();
  }

private:
  // The conv2d that may take add `a` as its residual, or null; of two, the
  // later one.
  static ir::Op *convTakingResidual(const ir::Op &a,
                                    std::map<const ir::Value *, unsigned> &counts,
                                    const std::unordered_map<const ir::Op *, size_t> &position) {
    const ir::TensorType &y = a.result(0)->type();
    if (a.operand(0)->type() != y || a.operand(1)->type() != y || a.operand(0) == a.operand(1))
      return nullptr;
    ir::Op *best = nullptr;
    for (int i : {0, 1}) {
      ir::Value *r = a.operand(i), *s = a.operand(1 - i);
      ir::Op *p = ir::unfusedLayerOf(r);
      if (!p || p->name() != "conv2d" || counts[r] != 1) continue;
      const ir::Op *sDef = s->definingOp();
      if (sDef && position.at(sDef) > position.at(p)) continue;
      if (!best || position.at(p) > position.at(best)) best = p;
    }
    return best;
  }
};

} // namespace

std::unique_ptr<Pass> createFuseResidualAddPass() {
  return std::make_unique<FuseResidualAddPass>();
}

} // namespace dtnn::passes
