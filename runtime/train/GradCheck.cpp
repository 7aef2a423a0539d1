// Gradient checks (see GradCheck.h). Random values come from a splitmix64 stream of opts.seed,
// the same on every machine. An element's central difference perturbs one value by +-step and
// reruns the whole graph.
#include "runtime/train/GradCheck.h"

#include "passes/Backward.h"
#include "runtime/BackendRegistry.h"
#include "runtime/ModuleRunner.h"

#include <algorithm>
#include <cmath>

namespace dtnn::runtime {

namespace {

// splitmix64: enough randomness for test data.
struct Rng {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  double uniform(double lo, double hi) { return lo + (hi - lo) * double(next() >> 11) * 0x1.0p-53; }
};

bool contains(const std::vector<std::string> &v, const std::string &s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// Fills a host tensor with random values for its element type.
Error fillRandom(Tensor &t, std::pair<double, double> range, int64_t classes, Rng &rng) {
  switch (t.type().dtype) {
  case ir::DType::F64:
    for (int64_t i = 0; i < t.numel(); ++i) t.data<double>()[i] = rng.uniform(range.first, range.second);
    return Error::success();
  case ir::DType::I32:
    for (int64_t i = 0; i < t.numel(); ++i)
      t.data<int32_t>()[i] = static_cast<int32_t>(rng.next() % uint64_t(classes));
    return Error::success();
  case ir::DType::I64:
    for (int64_t i = 0; i < t.numel(); ++i)
      t.data<int64_t>()[i] = static_cast<int64_t>(rng.next() % uint64_t(classes));
    return Error::success();
  default:
    return Error::make("gradient checks take f64, i32 or i64 values, got " + t.type().str());
  }
}

// A perturbable tensor: a graph input or a parameter.
struct Wrt {
  std::string name;
  ir::Value *value;
  bool isInput;
  size_t inputIndex;
};

} // namespace

Expected<std::vector<GradCheckResult>> checkGradients(ir::Module &m, const GradCheckOptions &opts) {
  ir::Graph *g = m.findGraph("f");
  if (!g) return Error::make("a gradient check needs a graph @f");
  if (g->outputs().size() != 1)
    return Error::make("a gradient check needs a graph @f of one output, got " +
                       std::to_string(g->outputs().size()));
  ir::Value *out = g->outputs()[0];
  std::vector<Wrt> wrt;
  size_t numForwardInputs = g->inputs().size();
  for (size_t i = 0; i < numForwardInputs; ++i) {
    ir::Value *in = g->inputs()[i];
    if (in->type().dtype == ir::DType::F64 && !contains(opts.skip, in->name()))
      wrt.push_back({in->name(), in, true, i});
  }
  for (const auto &p : m.params())
    if (p->trainable && !contains(opts.skip, p->name)) wrt.push_back({p->name, p->value, false, 0});
  ir::Value *dy = g->addInput("dy", out->type());
  std::vector<ir::Value *> wrtValues;
  for (const Wrt &w : wrt) wrtValues.push_back(w.value);
  auto grads = passes::appendBackward(*g, {{out, dy}}, wrtValues);
  if (!grads) return grads.takeError();
  std::vector<ir::Value *> outs = {out};
  for (size_t i = 0; i < wrt.size(); ++i) {
    if (!(*grads)[i]) return Error::make("no gradient reaches " + wrt[i].name);
    if ((*grads)[i]->type() != wrt[i].value->type())
      return Error::make("the gradient of " + wrt[i].name + " is " + (*grads)[i]->type().str() +
                         ", not " + wrt[i].value->type().str());
    outs.push_back((*grads)[i]);
  }
  g->setOutputs(outs);

  auto backends = BackendSet::create("reference", {});
  if (!backends) return backends.takeError();
  ModuleRunner runner(m, *backends);
  auto exec = runner.executor(*g, 1);
  if (!exec) return exec.takeError();
  Executor &ex = **exec;
  const Plan *plan = &ex.plan();
  ParamStore &store = runner.params();

  Rng rng{opts.seed};
  auto rangeOf = [&](const std::string &name) {
    auto it = opts.ranges.find(name);
    return it == opts.ranges.end() ? std::make_pair(opts.lo, opts.hi) : it->second;
  };
  std::vector<Tensor> inputs;
  for (size_t i = 0; i < g->inputs().size(); ++i) {
    inputs.emplace_back(plan->values[plan->inputs[i]].desc.type);
    const std::string &name = g->inputs()[i]->name();
    if (Error e = fillRandom(inputs.back(), name == "dy" ? std::make_pair(-1.0, 1.0) : rangeOf(name),
                             opts.classes, rng))
      return e;
    ex.setInput(i, inputs.back().raw(), inputs.back().bytes());
  }
  for (const auto &p : m.params()) {
    Tensor t(p->type);
    if (Error e = fillRandom(t, rangeOf(p->name), opts.classes, rng)) return e;
    if (Error e = store.write(p->name, t)) return e;
  }

  if (Error e = ex.run()) return e;
  std::vector<Tensor> analytic;
  for (size_t i = 0; i < wrt.size(); ++i) analytic.push_back(ex.output(i + 1));
  const Tensor &seed = inputs.back();
  auto loss = [&]() -> Expected<double> {
    if (Error e = ex.run()) return e;
    Tensor y = ex.output(0);
    double l = 0;
    for (int64_t k = 0; k < y.numel(); ++k) l += y.data<double>()[k] * seed.data<double>()[k];
    return l;
  };

  std::vector<GradCheckResult> results;
  for (size_t i = 0; i < wrt.size(); ++i) {
    const Wrt &w = wrt[i];
    GradCheckResult r{w.name, w.value->type(), 0, 0, {}};
    Tensor base = w.isInput ? inputs[w.inputIndex].clone() : *store.read(w.name);
    int64_t n = base.numel();
    int64_t stride = std::max<int64_t>(1, n / opts.maxElements);
    for (int64_t k = 0; k < n; k += stride) {
      Tensor t = base.clone();
      auto set = [&](double v) -> Error {
        t.data<double>()[k] = v;
        if (w.isInput) {
          ex.setInput(w.inputIndex, t.raw(), t.bytes());
          return Error::success();
        }
        return store.write(w.name, t);
      };
      double x0 = base.data<double>()[k];
      if (Error e = set(x0 + opts.step)) return e;
      Expected<double> lp = loss();
      if (!lp) return lp.takeError();
      if (Error e = set(x0 - opts.step)) return e;
      Expected<double> lm = loss();
      if (!lm) return lm.takeError();
      if (Error e = set(x0)) return e;
      double numeric = (*lp - *lm) / (2 * opts.step);
      double a = analytic[i].data<double>()[k];
      double bound = opts.atol + opts.rtol * std::abs(numeric);
      double ratio = std::abs(a - numeric) / bound;
      ++r.checked;
      r.worstDifference = std::max(r.worstDifference, std::isnan(ratio) ? INFINITY : ratio);
      if (!(std::abs(a - numeric) <= bound)) r.mismatches.push_back({k, a, numeric});
    }
    results.push_back(std::move(r));
  }
  return results;
}

} // namespace dtnn::runtime
