#include "GradCheck.h"

#include "ir/TextParser.h"
#include "passes/Backward.h"
#include "runtime/ModuleRunner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <sstream>

namespace dtnn::test {

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
  double uniform(double lo, double hi) { return lo + (hi - lo) * (next() >> 11) * 0x1.0p-53; }
};

bool contains(const std::vector<std::string> &v, const std::string &s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// Fills a host tensor with random values for its element type.
void fillRandom(runtime::Tensor &t, std::pair<double, double> range, int64_t classes, Rng &rng) {
  switch (t.type().dtype) {
  case ir::DType::F64:
    for (int64_t i = 0; i < t.numel(); ++i) t.data<double>()[i] = rng.uniform(range.first, range.second);
    break;
  case ir::DType::I32:
    for (int64_t i = 0; i < t.numel(); ++i) t.data<int32_t>()[i] = static_cast<int32_t>(rng.next() % classes);
    break;
  case ir::DType::I64:
    for (int64_t i = 0; i < t.numel(); ++i) t.data<int64_t>()[i] = static_cast<int64_t>(rng.next() % classes);
    break;
  default: FAIL() << "gradient checks need f64, i32 or i64 values, got " << t.type().str();
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

void expectGradientsMatch(const std::string &irText, const GradCheckOptions &opts) {
  SourceManager sm;
  std::ostringstream errs;
  DiagnosticEngine diags(sm, errs);
  auto m = ir::parseModule(irText, "gradcheck.dtir", sm, diags);
  ASSERT_TRUE(m) << errs.str();
  ir::Graph *g = m->findGraph("f");
  ASSERT_TRUE(g) << "the IR must define graph @f";
  ASSERT_EQ(g->outputs().size(), 1u);
  ir::Value *out = g->outputs()[0];

  std::vector<Wrt> wrt;
  size_t numForwardInputs = g->inputs().size();
  for (size_t i = 0; i < numForwardInputs; ++i) {
    ir::Value *in = g->inputs()[i];
    if (in->type().dtype == ir::DType::F64 && !contains(opts.skip, in->name()))
      wrt.push_back({in->name(), in, true, i});
  }
  for (const auto &p : m->params())
    if (p->trainable && !contains(opts.skip, p->name)) wrt.push_back({p->name, p->value, false, 0});
  ir::Value *dy = g->addInput("dy", out->type());
  std::vector<ir::Value *> wrtValues;
  for (const Wrt &w : wrt) wrtValues.push_back(w.value);
  auto grads = passes::appendBackward(*g, {{out, dy}}, wrtValues);
  ASSERT_TRUE(grads) << grads.error().message();
  std::vector<ir::Value *> outs = {out};
  for (size_t i = 0; i < wrt.size(); ++i) {
    ASSERT_TRUE((*grads)[i]) << "no gradient reaches " << wrt[i].name;
    ASSERT_EQ((*grads)[i]->type(), wrt[i].value->type()) << "gradient type of " << wrt[i].name;
    outs.push_back((*grads)[i]);
  }
  g->setOutputs(outs);

  auto backends = runtime::BackendSet::create("reference", {});
  ASSERT_TRUE(backends) << backends.error().message();
  runtime::ModuleRunner runner(*m, *backends);
  auto exec = runner.executor(*g, 1);
  ASSERT_TRUE(exec) << exec.error().message();
  runtime::Executor &ex = **exec;
  const runtime::Plan *plan = &ex.plan();
  runtime::ParamStore &store = runner.params();

  Rng rng{opts.seed};
  auto rangeOf = [&](const std::string &name) {
    auto it = opts.ranges.find(name);
    return it == opts.ranges.end() ? std::make_pair(opts.lo, opts.hi) : it->second;
  };
  std::vector<runtime::Tensor> inputs;
  for (size_t i = 0; i < g->inputs().size(); ++i) {
    inputs.emplace_back(plan->values[plan->inputs[i]].desc.type);
    const std::string &name = g->inputs()[i]->name();
    fillRandom(inputs.back(), name == "dy" ? std::make_pair(-1.0, 1.0) : rangeOf(name),
               opts.classes, rng);
    ex.setInput(i, inputs.back().raw(), inputs.back().bytes());
  }
  for (const auto &p : m->params()) {
    runtime::Tensor t(p->type);
    fillRandom(t, rangeOf(p->name), opts.classes, rng);
    ASSERT_FALSE(store.write(p->name, t));
  }

  ASSERT_FALSE(ex.run());
  std::vector<runtime::Tensor> analytic;
  for (size_t i = 0; i < wrt.size(); ++i) analytic.push_back(ex.output(i + 1));
  const runtime::Tensor &seed = inputs.back();
  auto loss = [&]() {
    EXPECT_FALSE(ex.run());
    runtime::Tensor y = ex.output(0);
    double l = 0;
    for (int64_t k = 0; k < y.numel(); ++k) l += y.data<double>()[k] * seed.data<double>()[k];
    return l;
  };

  for (size_t i = 0; i < wrt.size(); ++i) {
    const Wrt &w = wrt[i];
    runtime::Tensor base = w.isInput ? inputs[w.inputIndex].clone() : *store.read(w.name);
    int64_t n = base.numel();
    int64_t stride = std::max<int64_t>(1, n / opts.maxElements);
    for (int64_t k = 0; k < n; k += stride) {
      runtime::Tensor t = base.clone();
      auto set = [&](double v) {
        t.data<double>()[k] = v;
        if (w.isInput)
          ex.setInput(w.inputIndex, t.raw(), t.bytes());
        else
          EXPECT_FALSE(store.write(w.name, t));
      };
      double x0 = base.data<double>()[k];
      set(x0 + opts.step);
      double lp = loss();
      set(x0 - opts.step);
      double lm = loss();
      set(x0);
      double numeric = (lp - lm) / (2 * opts.step);
      double a = analytic[i].data<double>()[k];
      EXPECT_NEAR(a, numeric, opts.atol + opts.rtol * std::abs(numeric))
          << "d/d " << w.name << "[" << k << "]";
    }
  }
}

} // namespace dtnn::test
