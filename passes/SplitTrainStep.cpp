// split-train-step: splits each train step @M.train into @M.grads, which
// computes the loss, the metrics and the parameter gradients without
// updating the parameters, and @M.update, which applies the optimizer to
// gradients it takes as inputs. A deterministic data-parallel run
// (`dtnn-run --deterministic`) runs @M.grads once per micro-batch, reduces
// the gradients itself in fixed point, then runs @M.update once.
//
// Algorithm: the updates are the ops that write their "param" and read a
// "grad" (gradientOperand). @M.grads takes @M.train's inputs and clones its
// other ops in order; its outputs are @M.train's, then each distinct
// gradient in the order of the updates. @M.update takes one input per
// gradient (`%grad.<param>`) and the inputs the updates read (`%lr`,
// `%step`), and clones the updates; an update that reads anything else is an
// error. @M.train stays.
#include "ir/Builder.h"
#include "passes/CommUtil.h"
#include "passes/PassRegistry.h"
#include "passes/PassUtil.h"

#include <map>

namespace dtnn::passes {

namespace {

using ValueMap = std::map<const ir::Value *, ir::Value *>;

// The clone of `op` in `b`'s graph with operands mapped by `vm`; maps its
// results too.
Error cloneOp(ir::Builder &b, const ir::Op &op, ValueMap &vm) {
  std::vector<ir::Value *> operands;
  for (ir::Value *v : op.operands()) {
    auto it = vm.find(v);
    if (it != vm.end())
      operands.push_back(it->second);
    else if (v->kind() == ir::Value::Kind::Param)
      operands.push_back(v);
    else
      return Error::make("'" + op.name() + "' reads " +
                         (v->definingOp() ? "a result of '" + v->definingOp()->name() + "'"
                                          : "%" + v->name()) +
                         ", which the update step cannot take (it takes gradients, parameters "
                         "and the train step's inputs)");
  }
  b.setLoc(op.loc());
  ir::Op *clone = op.body() ? b.createWithBody(op.name(), operands, ir::cloneGraph(*op.body(), ""),
                                               op.attrs())
                            : b.createOp(op.name(), operands, op.attrs());
  if (!clone) return b.takeError();
  for (size_t r = 0; r < op.results().size(); ++r) vm[op.result(r)] = clone->result(r);
  return Error::success();
}

class SplitTrainStepPass final : public Pass {
public:
  std::string_view name() const override { return "split-train-step"; }
  std::string_view description() const override {
    return "Splits each train step into a gradient step and an update step (for deterministic "
           "runs, which reduce gradients themselves).";
  }

  Expected<bool> run(ir::Module &m) override {
    std::vector<ir::Graph *> trains;
    for (const auto &g : m.graphs())
      if (g->name().ends_with(".train")) trains.push_back(g.get());
    bool changed = false;
    for (ir::Graph *train : trains) {
      std::string base = train->name().substr(0, train->name().size() - 6);
      if (m.findGraph(base + ".grads")) continue;
      if (Error e = split(m, *train, base)) return Error::make("split-train-step: " + e.message());
      changed = true;
    }
    return changed;
  }

private:
  Error split(ir::Module &m, const ir::Graph &train, const std::string &base) {
    std::vector<const ir::Op *> updates;
    std::vector<ir::Value *> grads;
    for (const auto &op : train.ops())
      if (int i = gradientOperand(*op); i >= 0) {
        updates.push_back(op.get());
        ir::Value *g = op->operand(static_cast<unsigned>(i));
        if (std::find(grads.begin(), grads.end(), g) == grads.end()) grads.push_back(g);
      }
    if (updates.empty()) return Error::make("@" + train.name() + " updates no parameter");

    ir::Graph *gg = m.addGraph(base + ".grads");
    ValueMap vm;
    for (ir::Value *in : train.inputs()) vm[in] = gg->addInput(in->name(), in->type());
    ir::Builder b(*gg);
    for (const auto &op : train.ops())
      if (std::find(updates.begin(), updates.end(), op.get()) == updates.end())
        if (Error e = cloneOp(b, *op, vm)) return e;
    std::vector<ir::Value *> outs;
    for (ir::Value *o : train.outputs()) outs.push_back(vm.at(o));
    for (ir::Value *g : grads) outs.push_back(vm.at(g));
    gg->setOutputs(outs);

    ir::Graph *ug = m.addGraph(base + ".update");
    ValueMap um;
    for (const ir::Op *u : updates) {
      int i = gradientOperand(*u);
      ir::Value *g = u->operand(static_cast<unsigned>(i));
      if (!um.count(g)) {
        const ir::Value *param = u->operand(0);
        um[g] = ug->addInput("grad." + param->name(), g->type());
      }
    }
    for (ir::Value *in : train.inputs()) {
      bool read = false;
      for (const ir::Op *u : updates)
        for (ir::Value *v : u->operands()) read = read || v == in;
      if (read) um[in] = ug->addInput(in->name(), in->type());
    }
    ir::Builder ub(*ug);
    for (const ir::Op *u : updates)
      if (Error e = cloneOp(ub, *u, um)) return e;
    ug->setOutputs({});
    return Error::success();
  }
};

} // namespace

std::unique_ptr<Pass> createSplitTrainStepPass() { return std::make_unique<SplitTrainStepPass>(); }

} // namespace dtnn::passes
