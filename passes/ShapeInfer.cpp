// shape-infer: recomputes every result type from operand types and attributes.
//
// Algorithm: first copy each parameter's declared type onto its SSA value, so
// an edited declaration reaches its uses. Then, for each graph, walk the ops
// in order (the list is topologically sorted, so every operand type is final
// when its user is reached), run the op table's shape rule through
// ir::inferResultTypes, and store the inferred types on the results. A graph
// input whose type changed thus propagates to every op downstream and to the
// graph's output types, which are read from the returned values. Attributes
// of the wrong kind and shape-rule failures stop the pass with an error that
// names the graph, the op and its location.
#include "passes/PassRegistry.h"
#include "passes/PassUtil.h"

namespace dtnn::passes {

namespace {

// Checks that each declared attribute present on `op` has the declared kind,
// so the shape rule's typed accessors cannot fail.
Error checkAttrKinds(const ir::Graph &g, const ir::Op &op) {
  for (const ir::AttrSpec &spec : op.def().attrs) {
    const ir::AttrValue *v = op.attrs().find(spec.name);
    if (v && ir::attrKindOf(*v) != spec.kind)
      return Error::make(describeOp(g, op) + ": attribute '" + spec.name + "' must be " +
                         ir::attrKindName(spec.kind) + ", got " + ir::attrValueStr(*v));
  }
  return Error::success();
}

class ShapeInferPass final : public Pass {
public:
  std::string_view name() const override { return "shape-infer"; }
  std::string_view description() const override {
    return "Recomputes every op's result types from its operand types and attributes.";
  }

  Expected<bool> run(ir::Module &m) override {
    bool changed = false;
    for (const auto &p : m.params()) {
      if (p->value->type() == p->type) continue;
      p->value->setType(p->type);
      changed = true;
    }
    for (const auto &g : m.graphs()) {
      Expected<bool> c = runOnGraph(*g);
      if (!c) return c.takeError();
      changed |= *c;
    }
    return changed;
  }

private:
  Expected<bool> runOnGraph(ir::Graph &g) {
    bool changed = false;
    for (const auto &op : g.ops()) {
      if (Error e = checkAttrKinds(g, *op)) return e;
      std::vector<ir::TensorType> operandTypes;
      for (const ir::Value *v : op->operands()) operandTypes.push_back(v->type());
      if (ir::Graph *body = op->body(); body && body->inputs().size() == operandTypes.size()) {
        // The region's arguments take the operands' types, and its ops follow.
        for (size_t i = 0; i < operandTypes.size(); ++i)
          if (body->inputs()[i]->type() != operandTypes[i]) {
            body->inputs()[i]->setType(operandTypes[i]);
            changed = true;
          }
        Expected<bool> c = runOnGraph(*body);
        if (!c) return c.takeError();
        changed |= *c;
      }
      ir::InferCtx ctx{operandTypes, op->attrs(), {}, {}, op->body()};
      if (Error e = ir::inferResultTypes(op->def(), ctx))
        return Error::make(describeOp(g, *op) + ": " + e.message());
      if (ctx.results.size() != op->results().size())
        return Error::make(describeOp(g, *op) + ": has " +
                           std::to_string(op->results().size()) + " results, the op defines " +
                           std::to_string(ctx.results.size()));
      for (size_t i = 0; i < ctx.results.size(); ++i) {
        ir::Value *r = op->result(static_cast<unsigned>(i));
        if (r->type() == ctx.results[i]) continue;
        r->setType(std::move(ctx.results[i]));
        changed = true;
      }
    }
    return changed;
  }
};

} // namespace

std::unique_ptr<Pass> createShapeInferPass() { return std::make_unique<ShapeInferPass>(); }

} // namespace dtnn::passes
