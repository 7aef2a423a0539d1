// mixed-precision: makes the ops that the op table declares Low compute in
// bfloat16, and puts casts only where a producer and a consumer disagree.
//
// Each op declares the type it computes in (ir::Precision, in its op table
// entry): Low ops (convolutions, dense layers, matmuls, attention) take every
// floating-point operand in bf16 and accumulate in float32; Follow ops
// (elementwise arithmetic, activations, pooling, shapes, batch norm's
// normalization) compute in their operands' type, the widest where they
// differ, with the operands they name in floatOperands (a batch norm's scale,
// shift and running statistics) in float32; Float ops (softmax, losses,
// sums, optimizer updates) take float32. An op that declares nothing (a
// plugin's may not) is taken as Float, with a remark.
//
// Algorithm: run before autodiff, on the forward graph. Walk the ops in
// order. For each, the wanted type of each floating-point operand that the op
// reads (not one it only reads the shape of, nor one it writes in place): bf16
// for a Low op, float32 for a Float op or a named float operand, else the
// widest type among the op's other float operands. An operand of another type
// is replaced by `cast` of it, one cast per value and type, placed before its
// first user; then the op's result types are inferred anew (its operands may
// have changed type upstream), so the ops after it see them. Only float32 and bf16 take part: an f64 operand, and every op
// with one, are left alone. Parameters keep their float32 type (the master
// copy that the optimizer updates); a Low op reads a cast of them, and
// autodiff, which takes a cast's gradient back to its operand's type, gives
// each parameter a float32 gradient. Last, a graph output whose type changed
// is cast back to the type it had, so the step's outputs are what they were.
//
// Casts are elementwise ops: fuse-elementwise puts them into the kernels
// around them, which then load or store bf16.
#include "ir/Builder.h"
#include "ir/OpTable.h"
#include "ir/ops/ShapeUtil.h"
#include "passes/PassRegistry.h"
#include "passes/PassUtil.h"

#include <map>

namespace dtnn::passes {

namespace {

using ir::DType;

// The rank of the types that take part, narrowest first; -1 for the others.
int width(DType t) { return t == DType::BF16 ? 0 : t == DType::F32 ? 1 : -1; }

bool named(const std::vector<std::string> &names, const std::string &n) {
  for (const std::string &s : names)
    if (s == n) return true;
  return false;
}

class MixedPrecisionPass final : public GraphPass {
public:
  std::string_view name() const override { return "mixed-precision"; }
  std::string_view description() const override {
    return "Computes convolutions, dense layers, matmuls and attention in bf16 with float32 "
           "accumulation, casting only where producer and consumer disagree.";
  }

  Expected<bool> runOnGraph(ir::Graph &g) override {
    std::vector<ir::TensorType> outputTypes;
    for (const ir::Value *v : g.outputs()) outputTypes.push_back(v->type());
    casts_.clear();
    bool changed = false;
    // Ops are added as the walk goes: collect them first.
    std::vector<ir::Op *> ops;
    for (const auto &op : g.ops()) ops.push_back(op.get());
    for (ir::Op *op : ops) {
      Expected<bool> c = retype(g, *op);
      if (!c) return c.takeError();
      changed |= *c;
    }
    ir::Builder b(g, {});
    for (size_t i = 0; i < outputTypes.size(); ++i) {
      ir::Value *v = g.outputs()[i];
      if (v->type().dtype == outputTypes[i].dtype) continue;
      ir::Value *&back = casts_[{v, outputTypes[i].dtype}];
      if (!back) back = ir::castTo(b, v, outputTypes[i].dtype);
      if (!back) return b.takeError();
      g.setOutput(i, back);
      changed = true;
    }
    return changed;
  }

private:
  // Casts the operands of `op` to the types it computes in and infers its results again.
  Expected<bool> retype(ir::Graph &g, ir::Op &op) {
    const ir::OpDef &def = op.def();
    if (op.body()) return false; // a region is made after this pass, and follows its operands
    ir::Precision p = def.precision;
    if (p == ir::Precision::Undeclared) {
      p = ir::Precision::Float;
      remark(op.loc(), "'" + def.name + "' declares no precision in the op table: float32");
    }
    std::vector<const ir::OperandSpec *> specs = def.operandSpecs(op.operands().size(), op.attrs());
    // The operands that take part, each with the type it should have.
    std::vector<int> wanted(op.operands().size(), -1);
    int widest = -1;
    for (size_t i = 0; i < specs.size(); ++i) {
      DType t = op.operand(unsigned(i))->type().dtype;
      if (t == DType::F64) return false;
      int w = width(t);
      if (w < 0 || specs[i]->effect != ir::Effect::Read) continue;
      if (p == ir::Precision::Low) {
        wanted[i] = 0;
      } else if (p == ir::Precision::Float || named(def.floatOperands, specs[i]->name)) {
        wanted[i] = 1;
      } else {
        wanted[i] = -2; // follows the widest of the others
        widest = std::max(widest, w);
      }
    }
    bool changed = false;
    ir::Builder b(g, op.loc());
    for (size_t i = 0; i < wanted.size(); ++i) {
      int w = wanted[i] == -2 ? widest : wanted[i];
      ir::Value *v = op.operand(unsigned(i));
      if (w < 0 || width(v->type().dtype) == w) continue;
      DType t = w == 0 ? DType::BF16 : DType::F32;
      ir::Value *&cast = casts_[{v, t}];
      if (!cast) {
        b.setInsertPoint(long(g.indexOf(&op)));
        cast = ir::castTo(b, v, t);
        if (!cast) return b.takeError();
      }
      op.setOperand(unsigned(i), cast);
      changed = true;
    }
    // Its operands' producers may have changed type too: infer its results again in any case.
    std::vector<ir::TensorType> operandTypes;
    for (const ir::Value *v : op.operands()) operandTypes.push_back(v->type());
    ir::InferCtx ctx{operandTypes, op.attrs(), {}, {}, nullptr};
    if (Error e = ir::inferResultTypes(def, ctx))
      return Error::make("mixed-precision: " + describeOp(g, op) + ": " + e.message());
    for (size_t i = 0; i < ctx.results.size() && i < op.results().size(); ++i) {
      if (op.result(unsigned(i))->type() == ctx.results[i]) continue;
      op.result(unsigned(i))->setType(ctx.results[i]);
      changed = true;
    }
    return changed;
  }

  std::map<std::pair<const ir::Value *, DType>, ir::Value *> casts_;
};

} // namespace

std::unique_ptr<Pass> createMixedPrecisionPass() { return std::make_unique<MixedPrecisionPass>(); }

} // namespace dtnn::passes
