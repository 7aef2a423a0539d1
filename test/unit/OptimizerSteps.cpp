#include "OptimizerSteps.h"

#include "ir/Builder.h"
#include "passes/Optimizers.h"
#include "passes/PassManager.h"
#include "runtime/ModuleRunner.h"
#include "runtime/train/FusionTargets.h"

#include <gtest/gtest.h>

#include <cmath>

namespace dtnn::test {

const Vec kInitial = {1.0, -2.0, 0.5, 3.0};
const std::vector<Vec> kGrads = {
    {0.5, -1.5, 2.0, 0.0}, {-0.25, 1.0, 0.3, 1e-3}, {1.0, -0.5, -2.0, 0.7}};
const Vec kLr = {0.1, 0.05, 0.01};

ir::SettingCall config(const std::string &name,
                       std::vector<std::pair<std::string, ir::AttrValue>> args) {
  ir::SettingCall c{name, {}};
  for (auto &[k, v] : args) c.args.set(k, v);
  return c;
}

namespace {

// Element i of parameter `p` at the start (u: a pattern of both signs), and
// of its gradient at step k.
double initial(size_t p, int64_t i) {
  return p == 0 ? kInitial[size_t(i)] : std::sin(double(i) * 0.7 + double(p));
}
double gradient(size_t p, int64_t k, int64_t i) {
  return p == 0 ? kGrads[size_t(k)][size_t(i)] : std::cos(double(i) * 1.3 + double(k) + double(p));
}

void put(runtime::Tensor &t, int64_t i, double v) {
  if (t.type().dtype == ir::DType::F64)
    t.data<double>()[i] = v;
  else
    t.data<float>()[i] = static_cast<float>(v);
}

bool holdsFusedUpdate(const ir::Graph &g) {
  for (const auto &op : g.ops())
    if (op->name() == "fused_update") return true;
  return false;
}

} // namespace

std::map<std::string, Vec> runSteps(const ir::SettingCall &settings, ir::DType dt,
                                    const StepOptions &o) {
  using ir::TensorType;
  auto spec = passes::readOptimizer(settings);
  EXPECT_TRUE(spec) << spec.error().message();
  if (!spec) return {};
  ir::Module m;
  std::vector<TensorType> types = {TensorType(dt, {4})};
  for (int64_t n : o.extra) types.push_back(TensorType(dt, {n}));
  ir::Graph *g = m.addGraph("step");
  std::vector<ir::Param *> params;
  std::vector<ir::Value *> grads;
  for (size_t p = 0; p < types.size(); ++p) {
    std::string name = p == 0 ? "w" : "u" + std::to_string(p - 1);
    params.push_back(m.addParam(name, types[p], "zeros", true));
    grads.push_back(g->addInput("g" + std::to_string(p), types[p]));
  }
  ir::Value *lr = g->addInput("lr", TensorType(dt, {}));
  ir::Value *step = g->addInput("step", TensorType(ir::DType::I64, {}));
  ir::Builder b(*g);
  for (size_t p = 0; p < params.size(); ++p) {
    Error e = passes::emitUpdate(m, b, *spec, *params[p], grads[p], lr, step);
    EXPECT_FALSE(e) << e.message();
    if (e) return {};
  }
  std::unique_ptr<passes::FusionTarget> target;
  if (o.fuse) {
    passes::PassManagerOptions po;
    if (o.backend != "reference") {
      auto t = runtime::makeFusionTarget(o.backend);
      EXPECT_TRUE(t) << t.error().message();
      if (!t) return {};
      target = std::move(*t);
      po.target = target.get();
    }
    passes::PassManager pm(po);
    EXPECT_FALSE(pm.parsePipeline("fuse-updates"));
    EXPECT_FALSE(pm.run(m));
    EXPECT_TRUE(holdsFusedUpdate(*g)) << "fuse-updates left the updates alone";
  }

  auto backends = runtime::BackendSet::create(o.backend, {});
  EXPECT_TRUE(backends) << backends.error().message();
  if (!backends) return {};
  runtime::ModuleRunner runner(m, *backends);
  auto exec = runner.executor(*g, 1);
  EXPECT_TRUE(exec) << exec.error().message();
  if (!exec) return {};
  runtime::ParamStore &store = runner.params();
  for (const auto &p : m.params()) {
    runtime::Tensor t(p->type);
    size_t index = 0;
    while (index < params.size() && params[index]->name != p->name) ++index;
    for (int64_t i = 0; i < t.numel(); ++i)
      put(t, i, index < params.size() ? initial(index, i) : p->init == "ones" ? 1.0 : 0.0);
    EXPECT_FALSE(store.write(p->name, t));
  }
  runtime::Executor &ex = **exec;
  for (int64_t k = 0; k < 3; ++k) {
    std::vector<runtime::Tensor> in;
    for (size_t p = 0; p < types.size(); ++p) {
      in.emplace_back(types[p]);
      for (int64_t i = 0; i < in.back().numel(); ++i) put(in.back(), i, gradient(p, k, i));
    }
    in.emplace_back(TensorType(dt, {}));
    put(in.back(), 0, kLr[size_t(k)]);
    in.emplace_back(TensorType(ir::DType::I64, {}));
    *in.back().data<int64_t>() = k + 1;
    for (size_t i = 0; i < in.size(); ++i) ex.setInput(i, in[i].raw(), in[i].bytes());
    EXPECT_FALSE(ex.run());
  }
  std::map<std::string, Vec> out;
  for (const auto &p : m.params()) {
    runtime::Tensor t = *store.read(p->name);
    for (int64_t i = 0; i < t.numel(); ++i)
      out[p->name].push_back(dt == ir::DType::F64 ? t.data<double>()[i] : t.data<float>()[i]);
  }
  return out;
}

} // namespace dtnn::test
