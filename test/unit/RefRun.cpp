#include "RefRun.h"

#include "backends/reference/ReferenceBackend.h"
#include "ir/TextParser.h"
#include "runtime/Executor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

namespace dtnn::test {

std::vector<runtime::Tensor> runGraph(const std::string &irText,
                                      const std::vector<runtime::Tensor> &inputs,
                                      const std::map<std::string, runtime::Tensor> &params) {
  SourceManager sm;
  std::ostringstream errs;
  DiagnosticEngine diags(sm, errs);
  auto m = ir::parseModule(irText, "refrun.dtir", sm, diags);
  if (!m) {
    ADD_FAILURE() << "IR does not parse:\n" << errs.str();
    return {};
  }
  ir::Graph *g = m->findGraph("f");
  if (!g) {
    ADD_FAILURE() << "the IR must define graph @f";
    return {};
  }
  auto backend = reference::createReferenceBackend({});
  auto plan = runtime::buildPlan(*g, 1, *backend);
  if (!plan) {
    ADD_FAILURE() << plan.error().message();
    return {};
  }
  if (inputs.size() != plan->inputs.size()) {
    ADD_FAILURE() << "graph @f takes " << plan->inputs.size() << " inputs, got " << inputs.size();
    return {};
  }
  runtime::ParamStore store(*m, *backend);
  for (const auto &[name, t] : params) {
    const ir::Param *p = m->findParam(name);
    if (!p || p->type != t.type()) {
      ADD_FAILURE() << "parameter @" << name << " of type " << t.type().str()
                    << (p ? " does not match " + p->type.str() : " does not exist");
      return {};
    }
    store.write(name, t);
  }
  runtime::Executor ex(*plan, store, *backend);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ir::TensorType &want = plan->values[plan->inputs[i]].type;
    if (inputs[i].type() != want) {
      ADD_FAILURE() << "input " << i << " has type " << inputs[i].type().str() << ", expected "
                    << want.str();
      return {};
    }
    ex.setInput(i, inputs[i].raw(), inputs[i].bytes());
  }
  ex.run();
  std::vector<runtime::Tensor> outs;
  for (size_t i = 0; i < plan->outputs.size(); ++i) outs.push_back(ex.output(i));
  return outs;
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
    case ir::DType::F64: t.data<double>()[i] = v; break;
    case ir::DType::I32: t.data<int32_t>()[i] = static_cast<int32_t>(v); break;
    case ir::DType::I64: t.data<int64_t>()[i] = static_cast<int64_t>(v); break;
    case ir::DType::U8: t.data<uint8_t>()[i] = static_cast<uint8_t>(v); break;
    case ir::DType::Bool: t.data<bool>()[i] = v != 0; break;
    }
  }
  return t;
}

std::vector<double> toDoubles(const runtime::Tensor &t) {
  std::vector<double> out(static_cast<size_t>(t.numel()));
  for (size_t i = 0; i < out.size(); ++i) {
    switch (t.type().dtype) {
    case ir::DType::F32: out[i] = t.data<float>()[i]; break;
    case ir::DType::F64: out[i] = t.data<double>()[i]; break;
    case ir::DType::I32: out[i] = t.data<int32_t>()[i]; break;
    case ir::DType::I64: out[i] = static_cast<double>(t.data<int64_t>()[i]); break;
    case ir::DType::U8: out[i] = t.data<uint8_t>()[i]; break;
    case ir::DType::Bool: out[i] = t.data<bool>()[i]; break;
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
