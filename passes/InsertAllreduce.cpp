// insert-allreduce: averages every parameter gradient over the ranks of a
// data-parallel run before the optimizer uses it.
//
// Algorithm: for each optimizer update (an op that writes its "param" and
// reads a "grad", see gradientOperand), the gradient g gets an
// `allreduce_start g {op="mean"}` and an `allreduce_wait` of its token right
// after g's producer, and every later use of g reads the wait's result
// instead. A gradient that already comes out of an allreduce_wait is left
// alone, so the pass may run twice. "mean" weighs each rank by its share of
// the global batch, so the result is the gradient of the global batch's mean
// loss even when the ranks hold different numbers of samples.
// bucket-allreduce then merges these per-gradient reductions, and
// schedule-comm moves starts and waits to overlap the rest of backward.
#include "ir/Builder.h"
#include "passes/CommUtil.h"
#include "passes/PassRegistry.h"
#include "passes/PassUtil.h"

#include <set>

namespace dtnn::passes {

namespace {

class InsertAllreducePass final : public GraphPass {
public:
  std::string_view name() const override { return "insert-allreduce"; }
  std::string_view description() const override {
    return "Averages every parameter gradient over the ranks (an allreduce start and wait "
           "before its optimizer update).";
  }

  Expected<bool> runOnGraph(ir::Graph &g) override {
    std::vector<std::pair<ir::Op *, int>> updates;
    for (const auto &op : g.ops())
      if (int i = gradientOperand(*op); i >= 0) updates.push_back({op.get(), i});
    std::set<ir::Value *> done;
    bool changed = false;
    for (auto [update, i] : updates) {
      ir::Value *grad = update->operand(static_cast<unsigned>(i));
      ir::Op *def = grad->definingOp();
      if (done.count(grad) || (def && def->name() == "allreduce_wait")) continue;
      if (!def)
        return Error::make(describeOp(g, *update) + ": its gradient %" + grad->name() +
                           " is a graph input; insert-allreduce reduces gradients that ops "
                           "produce (the wait updates them in place)");
      done.insert(grad);
      // Right after the producer.
      long pos = static_cast<long>(g.indexOf(def)) + 1;
      ir::Builder b(g, update->loc());
      b.setInsertPoint(pos);
      ir::AttrMap attrs;
      attrs.set("op", std::string("mean"));
      ir::Value *token = b.create1("allreduce_start", {grad}, attrs);
      b.setInsertPoint(pos + 1);
      ir::Op *wait = token ? b.createOp("allreduce_wait", {token, grad}, attrs) : nullptr;
      if (!wait) return Error::make(describeOp(g, *update) + ": " + b.takeError().message());
      ir::Value *reduced = wait->result(0);
      // Every use after the wait reads the reduced gradient.
      for (size_t k = g.indexOf(wait) + 1; k < g.ops().size(); ++k) {
        ir::Op *user = g.ops()[k].get();
        for (unsigned j = 0; j < user->operands().size(); ++j)
          if (user->operand(j) == grad) user->setOperand(j, reduced);
      }
      std::vector<ir::Value *> outs = g.outputs();
      for (ir::Value *&o : outs)
        if (o == grad) o = reduced;
      g.setOutputs(outs);
      changed = true;
    }
    return changed;
  }
};

} // namespace

std::unique_ptr<Pass> createInsertAllreducePass() { return std::make_unique<InsertAllreducePass>(); }

} // namespace dtnn::passes
