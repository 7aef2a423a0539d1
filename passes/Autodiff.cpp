// autodiff: turns a model's forward graph into a train-step graph and an
// eval-step graph, using the module's train settings (loss, metrics,
// optimizer).
//
// Algorithm: for the forward graph @M (the module's only graph not named
// *.train or *.eval):
//  1. @M.eval(%inputs..., %label) clones @M, appends the loss and the
//     metrics, and returns (loss, metrics...).
//  2. @M.train(%inputs..., %label, %lr, %step) clones @M with each op that
//     has a training form replaced by it (batchnorm -> batchnorm_train,
//     dropout -> dropout_train; extra operands such as `step` are the graph
//     inputs of that name), appends the loss and the metrics, seeds the
//     loss's gradient with `fill %loss {value=1.0}`, runs the reverse-mode
//     engine (passes/Backward.h) for every trainable parameter the graph
//     uses, and appends one optimizer update per parameter
//     (passes/Optimizers.h), in parameter order. It returns (loss,
//     metrics...); the updates write the parameters and their optimizer
//     state in place and yield their new versions. An op that writes a
//     parameter in place (batchnorm_train's running statistics) is followed
//     by reads of its new version, never of the old value.
// A prediction [N, C] takes labels i32[N]; a sequence model's [N, T, ..., C]
// takes one label per position, i32[N, T, ...], and the loss and metrics see
// both flattened to one row per position. Defaults when the module has no
// train settings: softmax_cross_entropy and sgd. The pass fails if @M.train
// already exists.
#include "ir/Builder.h"
#include "ir/OpTable.h"
#include "ir/RunSettings.h"
#include "passes/Backward.h"
#include "passes/Losses.h"
#include "passes/Optimizers.h"
#include "passes/PassRegistry.h"

#include <map>
#include <set>

namespace dtnn::passes {

namespace {

using ValueMap = std::map<const ir::Value *, ir::Value *>;

// Clones the ops of `src` into `dst` (whose inputs are already mapped in
// `vm`), switching to training forms when `training` is set. A training form
// with a `seed` attribute (dropout_train) gets one derived from the run's
// seed and its rank among such ops, so that no two dropout layers share
// masks and adding other layers does not change them.
Error cloneOps(const ir::Graph &src, ir::Graph &dst, ValueMap &vm, bool training,
               int64_t runSeed) {
  ir::Builder b(dst);
  int64_t position = 0;
  // A parameter maps to itself until an op writes it in place; later ops
  // read the writer's new version.
  auto mapped = [&](ir::Value *v) {
    auto it = vm.find(v);
    return it != vm.end() ? it->second : v->kind() == ir::Value::Kind::Param ? v : vm.at(v);
  };
  for (const auto &op : src.ops()) {
    b.setLoc(op->loc());
    std::vector<ir::Value *> operands;
    for (ir::Value *v : op->operands()) operands.push_back(mapped(v));
    const ir::OpDef *def = &op->def();
    if (training && !def->trainForm.empty()) {
      def = ir::OpTable::get().lookup(def->trainForm);
      if (!def) return Error::make("autodiff: unknown training form '" + op->def().trainForm + "'");
      for (size_t i = operands.size(); i < def->operands.size(); ++i) {
        ir::Value *in = nullptr;
        for (ir::Value *gi : dst.inputs())
          if (gi->name() == def->operands[i].name) in = gi;
        if (!in) return Error::make("autodiff: '" + def->name + "' needs a graph input %" + def->operands[i].name);
        operands.push_back(in);
      }
    }
    ir::AttrMap attrs;
    for (const auto &[name, v] : op->attrs().entries())
      if (def->findAttr(name)) attrs.set(name, v);
    if (def != &op->def() && def->findAttr("seed") && !attrs.find("seed"))
      attrs.set("seed", static_cast<int64_t>(
                            (static_cast<uint64_t>(runSeed) * 1000003u + position++) & 0x7fffffff));
    std::vector<ir::Value *> results = b.create(def->name, operands, attrs);
    if (Error e = b.takeError()) return Error::make("autodiff: " + e.message());
    for (size_t r = 0; r < op->results().size(); ++r) vm[op->result(r)] = results[r];
    std::vector<const ir::OperandSpec *> specs = def->operandSpecs(operands.size(), attrs);
    size_t version = def->numResults;
    for (size_t i = 0; i < operands.size(); ++i)
      if (specs[i]->writes() && i < op->operands().size() && version < results.size())
        vm[op->operand(i)] = results[version++];
  }
  return Error::success();
}

// Appends the loss and metrics; returns them, loss first. A sequence model's prediction
// [N, T, ..., C] and labels [N, T, ...] are flattened to one row per position, [N*T*..., C] and
// [N*T*...], so that the classifier losses and metrics average over every position.
Expected<std::vector<ir::Value *>> appendObjective(ir::Graph &g, const ir::RunSettings &settings,
                                                   ir::Value *prediction, ir::Value *label) {
  ir::Builder b(g);
  if (prediction->type().rank() > 2) {
    int64_t classes = prediction->type().dims.back();
    prediction = b.create1("reshape", {prediction}, ir::attrs({{"shape", std::vector<int64_t>{-1, classes}}}));
    if (prediction) label = b.create1("reshape", {label}, ir::attrs({{"shape", std::vector<int64_t>{-1}}}));
    if (!prediction || !label) return Error::make("autodiff: " + b.takeError().message());
  }
  auto l = emitLoss(b, settings.loss, prediction, label);
  if (!l) return l.takeError();
  std::vector<ir::Value *> outs = {*l};
  MetricArgs args{prediction, label, 0, lossIgnoreIndex(settings.loss)};
  for (const std::string &name : settings.metrics) {
    auto m = emitMetric(b, name, args);
    if (!m) return m.takeError();
    outs.push_back(*m);
  }
  return outs;
}

class AutodiffPass final : public Pass {
public:
  std::string_view name() const override { return "autodiff"; }
  std::string_view description() const override {
    return "Builds the train-step graph (forward, loss, backward, optimizer updates) and the "
           "eval-step graph of the model.";
  }

  Expected<bool> run(ir::Module &m) override {
    ir::Graph *fwd = nullptr;
    for (const auto &g : m.graphs()) {
      const std::string &n = g->name();
      if (n.ends_with(".train") || n.ends_with(".eval")) continue;
      if (fwd) return Error::make("autodiff: the module has more than one forward graph");
      fwd = g.get();
    }
    if (!fwd) return Error::make("autodiff: the module has no forward graph");
    if (m.findGraph(fwd->name() + ".train"))
      return Error::make("autodiff: graph @" + fwd->name() + ".train already exists");
    if (fwd->outputs().size() != 1)
      return Error::make("autodiff: the model must return one prediction, @" + fwd->name() +
                         " returns " + std::to_string(fwd->outputs().size()));
    if (fwd->outputs()[0]->kind() == ir::Value::Kind::Param)
      return Error::make("autodiff: the prediction of @" + fwd->name() + " is the parameter " +
                         "@" + fwd->outputs()[0]->param()->name + ", which does not depend on the input");
    const ir::TensorType &prediction = fwd->outputs()[0]->type();
    if (prediction.rank() && ir::isBatchDim(prediction.dims[0]) &&
        prediction.dims[0] != ir::kDynamic)
      return Error::make("autodiff: the prediction " + prediction.str() + " of @" + fwd->name() +
                         " has " + std::to_string(ir::batchMultiple(prediction.dims[0])) +
                         " rows per sample, but the loss and the labels take one; reshape it "
                         "back to [N, ...]");
    for (const ir::Value *in : fwd->inputs())
      if (in->name() == "label" || in->name() == "lr" || in->name() == "step")
        return Error::make("autodiff: model input %" + in->name() +
                           " has the name of a train-step input; rename it");
    auto settings = ir::readRunSettings(m.trainConfig());
    if (!settings) return settings.takeError();
    auto spec = readOptimizer(settings->optimizer);
    if (!spec) return spec.takeError();
    if (Error e = buildEval(m, *fwd, *settings)) return e;
    if (Error e = buildTrain(m, *fwd, *settings, *spec)) return e;
    return true;
  }

private:
  // Adds the model's inputs and %label to `g`, mapped in `vm`: i32[N] for a prediction [N, C],
  // one label per position, i32[N, T, ...], for a sequence model's [N, T, ..., C].
  static ir::Value *addDataInputs(const ir::Graph &fwd, ir::Graph &g, ValueMap &vm) {
    for (const ir::Value *in : fwd.inputs()) vm[in] = g.addInput(in->name(), in->type());
    const ir::TensorType &out = fwd.outputs()[0]->type();
    std::vector<int64_t> dims = {out.rank() ? out.dims[0] : 1};
    if (out.rank() > 2) dims.assign(out.dims.begin(), out.dims.end() - 1);
    return g.addInput("label", ir::TensorType(ir::DType::I32, dims));
  }

  static Error buildEval(ir::Module &m, const ir::Graph &fwd, const ir::RunSettings &settings) {
    ir::Graph *g = m.addGraph(fwd.name() + ".eval");
    ValueMap vm;
    ir::Value *label = addDataInputs(fwd, *g, vm);
    if (Error e = cloneOps(fwd, *g, vm, false, 0)) return e;
    auto outs = appendObjective(*g, settings, vm.at(fwd.outputs()[0]), label);
    if (!outs) return outs.takeError();
    g->setOutputs(*outs);
    return Error::success();
  }

  static Error buildTrain(ir::Module &m, const ir::Graph &fwd, const ir::RunSettings &settings,
                          const OptimizerSpec &spec) {
    ir::Graph *g = m.addGraph(fwd.name() + ".train");
    ValueMap vm;
    ir::Value *label = addDataInputs(fwd, *g, vm);
    ir::DType floatType = fwd.outputs()[0]->type().dtype;
    ir::Value *lr = g->addInput("lr", ir::TensorType(floatType, {}));
    ir::Value *step = g->addInput("step", ir::TensorType(ir::DType::I64, {}));
    if (Error e = cloneOps(fwd, *g, vm, true, static_cast<int64_t>(settings.seed))) return e;
    auto outs = appendObjective(*g, settings, vm.at(fwd.outputs()[0]), label);
    if (!outs) return outs.takeError();
    ir::Value *loss = (*outs)[0];

    std::vector<ir::Param *> params;
    std::set<const ir::Value *> used;
    for (const auto &op : g->ops())
      for (const ir::Value *v : op->operands()) used.insert(v);
    for (const auto &p : m.params())
      if (p->trainable && used.count(p->value)) params.push_back(p.get());
    std::vector<ir::Value *> wrt;
    for (ir::Param *p : params) wrt.push_back(p->value);

    ir::Builder b(*g);
    ir::Value *seed = b.create1("fill", {loss}, ir::attrs({{"value", 1.0}}));
    if (!seed) return Error::make("autodiff: " + b.takeError().message());
    auto grads = appendBackward(*g, {{loss, seed}}, wrt);
    if (!grads) return grads.takeError();
    for (size_t i = 0; i < params.size(); ++i) {
      if (!(*grads)[i]) continue; // the loss does not depend on it
      b.setLoc(params[i]->loc);
      if (Error e = emitUpdate(m, b, spec, *params[i], (*grads)[i], lr, step)) return e;
    }
    g->setOutputs(*outs);
    return Error::success();
  }
};

} // namespace

std::unique_ptr<Pass> createAutodiffPass() { return std::make_unique<AutodiffPass>(); }

} // namespace dtnn::passes
