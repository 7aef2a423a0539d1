// fold-batchnorm: folds an inference batchnorm into the conv2d or dense op
// before it, so that inference runs one layer instead of two, and the layer
// can then take the activation after the batchnorm (fuse-activation).
//
// Algorithm: for each batchnorm B (the inference form, with running
// statistics) whose input is the result r of a conv2d or dense P without an
// activation, where r has no other use: insert before P
//   %w2, %b2 = batchnorm_fold %w, %gamma, %beta, %mean, %var[, %bias] {eps}
// (s = gamma / sqrt(var + eps); w2 = w * s along the output channels,
// b2 = (bias - mean) * s + beta), make P read %w2 and %b2, replace B's
// result by r, merge B's location into P's, and erase B. The folded weights
// are computed from the current parameters (by the runtime once per change
// of the parameters: runtime/plan/Buffers.cpp), so checkpoints and training
// are untouched.
// A batchnorm with a fused activation hands it to P. Training graphs hold
// batchnorm_train, which this pass leaves alone. Each P takes one batchnorm,
// so one sweep reaches the fixed point.
#include "ir/OpTable.h"
#include "ir/UseIndex.h"
#include "ir/ops/FusedActivation.h"
#include "passes/PassRegistry.h"

#include <set>

namespace dtnn::passes {

namespace {

class FoldBatchNormPass final : public GraphPass {
public:
  std::string_view name() const override { return "fold-batchnorm"; }
  std::string_view description() const override {
    return "Folds an inference batchnorm into the conv2d or dense op before it.";
  }
  bool fuses() const override { return true; }

  Expected<bool> runOnGraph(ir::Graph &g) override {
    const ir::OpDef *fold = ir::OpTable::get().lookup("batchnorm_fold");
    auto counts = g.useCounts();
    std::vector<ir::Op *> norms;
    for (const auto &op : g.ops()) {
      if (op->name() != "batchnorm") continue;
      if (!ir::unfusedLayerOf(op->operand(0)) || counts[op->operand(0)] != 1) continue;
      norms.push_back(op.get());
    }
    ir::UseIndex index(g);
    // The batchnorm_fold made for each P, appended now and moved before P at the end.
    std::map<const ir::Op *, ir::Op *> foldOf;
    std::set<const ir::Op *> erased;
    for (ir::Op *bn : norms) {
      ir::Value *r = bn->operand(0);
      ir::Op *p = r->definingOp();
      std::vector<ir::Value *> operands = {p->operand(1), bn->operand(1), bn->operand(2),
                                           bn->operand(3), bn->operand(4)};
      if (p->operands().size() > 2) operands.push_back(p->operand(2));
      const ir::TensorType &w = p->operand(1)->type();
      ir::AttrMap attrs;
      attrs.set("eps", ir::AttrValue(bn->attrs().getFloat("eps")));
      ir::Op *f = g.addOp(*fold, operands, attrs, {w, ir::TensorType(w.dtype, {w.dims[0]})},
                          bn->loc());
      index.addUser(f);
      foldOf[p] = f;
      std::vector<ir::Value *> pOperands = {p->operand(0), f->result(0), f->result(1)};
      p->setOperands(pOperands);
      index.addUser(p);
      std::string act = ir::fusedActivationOf(*bn);
      if (!act.empty()) p->attrs().set("act", act);
      ir::Location loc = p->loc();
      loc.merge(bn->loc());
      p->setLoc(loc);
      index.replaceAllUses(bn->result(0), r);
      erased.insert(bn);
    }
    if (erased.empty()) return false;
    std::set<const ir::Op *> folds;
    for (const auto &[p, f] : foldOf) folds.insert(f);
    std::vector<ir::Op *> order;
    for (const auto &op : g.ops()) {
      if (folds.count(op.get())) continue;
      if (auto it = foldOf.find(op.get()); it != foldOf.end()) order.push_back(it->second);
      order.push_back(op.get());
    }
    g.reorder(order);
    g.eraseOpsIf([&](const ir::Op &op) { return erased.count(&op) > 0; });
    return true;
  }
};

} // namespace

std::unique_ptr<Pass> createFoldBatchNormPass() { return std::make_unique<FoldBatchNormPass>(); }

} // namespace dtnn::passes
