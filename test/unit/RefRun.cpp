#include "RefRun.h"

#include "ir/TextParser.h"
#include "runtime/BFloat16.h"
#include "runtime/Communicator.h"
#include "runtime/ModuleRunner.h"

#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <sstream>

namespace dtnn::test {

// The parsed module and everything planned from it; the members refer to the
// ones declared before them.
struct GraphRunner::State {
  SourceManager sm;
  std::ostringstream errs;
  DiagnosticEngine diags{sm, errs};
  std::unique_ptr<ir::Module> module;
  std::optional<runtime::BackendSet> backends;
  // One rank, for the collectives' kernels.
  std::unique_ptr<runtime::Communicator> comm = runtime::makeLocalCommunicator();
  std::unique_ptr<runtime::ModuleRunner> runner;
  runtime::Executor *exec = nullptr;
  std::string error;
};

GraphRunner::GraphRunner(const std::string &irText, int threads, const std::string &backend)
    : s_(std::make_unique<State>()) {
  s_->module = ir::parseModule(irText, "refrun.dtir", s_->sm, s_->diags);
  if (!s_->module) {
    s_->error = "IR does not parse:\n" + s_->errs.str();
    return;
  }
  ir::Graph *g = s_->module->findGraph("f");
  if (!g) {
    s_->error = "the IR must define graph @f";
    return;
  }
  auto backends = runtime::BackendSet::create(backend, {threads});
  if (!backends) {
    s_->error = backends.error().message();
    return;
  }
  s_->backends.emplace(std::move(*backends));
  s_->runner = std::make_unique<runtime::ModuleRunner>(*s_->module, *s_->backends, s_->comm.get());
  auto exec = s_->runner->executor(*g, 1);
  if (!exec) {
    s_->error = exec.error().message();
    return;
  }
  s_->exec = *exec;
}

GraphRunner::~GraphRunner() = default;

bool GraphRunner::ok() const { return s_->exec != nullptr; }

std::string GraphRunner::error() const { return s_->error; }

const runtime::Plan *GraphRunner::plan() const { return ok() ? &s_->exec->plan() : nullptr; }

bool GraphRunner::setParam(const std::string &name, const runtime::Tensor &t) {
  const ir::Param *p = ok() ? s_->module->findParam(name) : nullptr;
  if (!p || p->type != t.type()) {
    ADD_FAILURE() << "parameter @" << name << " of type " << t.type().str()
                  << (p ? " does not match " + p->type.str() : " does not exist");
    return false;
  }
  Error e = s_->runner->params().write(name, t);
  EXPECT_FALSE(e) << e.message();
  return !e;
}

bool GraphRunner::setParam(const std::string &name, const std::vector<double> &values) {
  const ir::Param *p = ok() ? s_->module->findParam(name) : nullptr;
  if (!p) {
    ADD_FAILURE() << "parameter @" << name << " does not exist";
    return false;
  }
  return setParam(name, makeTensor(p->type, values));
}

runtime::Tensor GraphRunner::param(const std::string &name) const {
  auto t = s_->runner->params().read(name);
  EXPECT_TRUE(t) << t.error().message();
  return t ? std::move(*t) : runtime::Tensor();
}

std::vector<runtime::Tensor> GraphRunner::run(const std::vector<runtime::Tensor> &inputs) {
  if (!ok()) {
    ADD_FAILURE() << error();
    return {};
  }
  const runtime::Plan &plan = s_->exec->plan();
  if (inputs.size() != plan.inputs.size()) {
    ADD_FAILURE() << "graph @f takes " << plan.inputs.size() << " inputs, got " << inputs.size();
    return {};
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ir::TensorType &want = plan.values[plan.inputs[i]].desc.type;
    if (inputs[i].type() != want) {
      ADD_FAILURE() << "input " << i << " has type " << inputs[i].type().str() << ", expected "
                    << want.str();
      return {};
    }
    s_->exec->setInput(i, inputs[i].raw(), inputs[i].bytes());
  }
  if (Error e = s_->exec->run()) {
    ADD_FAILURE() << e.message();
    return {};
  }
  std::vector<runtime::Tensor> outs;
  for (size_t i = 0; i < plan.outputs.size(); ++i) outs.push_back(s_->exec->output(i));
  return outs;
}

std::vector<std::vector<double>>
GraphRunner::runValues(const std::vector<std::vector<double>> &inputs) {
  std::vector<runtime::Tensor> in;
  for (size_t i = 0; ok() && i < inputs.size() && i < s_->exec->plan().inputs.size(); ++i)
    in.push_back(makeTensor(s_->exec->plan().values[s_->exec->plan().inputs[i]].desc.type,
                            inputs[i]));
  if (ok() && in.size() != inputs.size()) {
    ADD_FAILURE() << "graph @f takes " << s_->exec->plan().inputs.size() << " inputs, got "
                  << inputs.size();
    return {};
  }
  std::vector<std::vector<double>> outs;
  for (const runtime::Tensor &t : run(in)) outs.push_back(toDoubles(t));
  return outs;
}

std::vector<runtime::Tensor> runGraph(const std::string &irText,
                                      const std::vector<runtime::Tensor> &inputs,
                                      const std::map<std::string, runtime::Tensor> &params) {
  GraphRunner r(irText);
  if (!r.ok()) {
    ADD_FAILURE() << r.error();
    return {};
  }
  for (const auto &[name, t] : params)
    if (!r.setParam(name, t)) return {};
  return r.run(inputs);
}

std::vector<std::vector<double>>
runValues(const std::string &irText, const std::vector<std::vector<double>> &inputs,
          const std::map<std::string, std::vector<double>> &params) {
  GraphRunner r(irText);
  if (!r.ok()) {
    ADD_FAILURE() << r.error();
    return {};
  }
  for (const auto &[name, values] : params)
    if (!r.setParam(name, values)) return {};
  return r.runValues(inputs);
}

runtime::Tensor makeTensor(ir::TensorType type, std::vector<double> values) {
  runtime::Tensor t(type);
  if (static_cast<int64_t>(values.size()) != t.numel()) {
    ADD_FAILURE() << type.str() << " has " << t.numel() << " elements, got " << values.size()
                  << " values";
    return t;
  }
  for (size_t i = 0; i < values.size(); ++i) {
    double v = values[i];
    switch (type.dtype) {
    case ir::DType::F32: t.data<float>()[i] = static_cast<float>(v); break;
    case ir::DType::BF16: t.data<uint16_t>()[i] = runtime::narrowToBf16(static_cast<float>(v)); break;
    case ir::DType::F64: t.data<double>()[i] = v; break;
    case ir::DType::I32: t.data<int32_t>()[i] = static_cast<int32_t>(v); break;
    case ir::DType::I64: t.data<int64_t>()[i] = static_cast<int64_t>(v); break;
    case ir::DType::U8: t.data<uint8_t>()[i] = static_cast<uint8_t>(v); break;
    case ir::DType::Bool: t.data<bool>()[i] = v != 0; break;
    case ir::DType::Token: break;
    }
  }
  return t;
}

std::vector<double> toDoubles(const runtime::Tensor &t) {
  std::vector<double> out(static_cast<size_t>(t.numel()));
  for (size_t i = 0; i < out.size(); ++i) {
    switch (t.type().dtype) {
    case ir::DType::F32: out[i] = t.data<float>()[i]; break;
    case ir::DType::BF16: out[i] = runtime::widenBf16(t.data<uint16_t>()[i]); break;
    case ir::DType::F64: out[i] = t.data<double>()[i]; break;
    case ir::DType::I32: out[i] = t.data<int32_t>()[i]; break;
    case ir::DType::I64: out[i] = static_cast<double>(t.data<int64_t>()[i]); break;
    case ir::DType::U8: out[i] = t.data<uint8_t>()[i]; break;
    case ir::DType::Bool: out[i] = t.data<bool>()[i]; break;
    case ir::DType::Token: break;
    }
  }
  return out;
}

void expectTensorNear(const runtime::Tensor &actual, const std::vector<double> &expected,
                      double tol) {
  std::vector<double> got = toDoubles(actual);
  ASSERT_EQ(got.size(), expected.size()) << "element count of " << actual.type().str();
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], expected[i], tol + tol * std::abs(expected[i]))
        << "element " << i << " of " << actual.type().str();
}

} // namespace dtnn::test
