#include "runtime/Executor.h"

#include <cassert>

namespace dtnn::runtime {

Executor::Executor(const Plan &plan, ParamStore &params, Backend &backend)
    : plan_(plan), params_(params), backend_(backend) {
  arena_ = backend_.allocate(plan_.arenaBytes ? plan_.arenaBytes : 64);
  for (int id : plan_.inputs) inputs_.push_back(backend_.allocate(byteSize(plan_.values[id].type)));
  for (const PlanStep &s : plan_.steps) {
    KernelArgs a{*s.op, {}, {}};
    for (int id : s.in) a.in.push_back(view(id));
    for (int id : s.out) a.out.push_back(view(id));
    args_.push_back(std::move(a));
  }
}

Executor::~Executor() {
  backend_.release(arena_);
  for (void *p : inputs_) backend_.release(p);
}

TensorView Executor::view(int id) const {
  const PlanValue &v = plan_.values[id];
  switch (v.storage) {
  case PlanValue::Storage::Arena: return {static_cast<char *>(arena_) + v.offset, v.type};
  case PlanValue::Storage::Param: return params_.view(v.param);
  case PlanValue::Storage::Input: return {inputs_[v.input], v.type};
  }
  return {};
}

void Executor::setInput(size_t i, const void *host, size_t bytes) {
  assert(i < inputs_.size() && bytes == byteSize(plan_.values[plan_.inputs[i]].type));
  backend_.copyToDevice(inputs_[i], host, bytes);
}

void Executor::run() {
  for (size_t i = 0; i < plan_.steps.size(); ++i) plan_.steps[i].kernel->run(args_[i]);
  backend_.synchronize();
}

Tensor Executor::output(size_t i) const {
  TensorView v = view(plan_.outputs[i]);
  Tensor t(v.type);
  backend_.copyToHost(t.raw(), v.data, t.bytes());
  return t;
}

double Executor::scalarOutput(size_t i) const {
  TensorView v = view(plan_.outputs[i]);
  assert(v.numel() == 1 && (v.type.dtype == ir::DType::F32 || v.type.dtype == ir::DType::F64));
  if (v.type.dtype == ir::DType::F64) {
    double d = 0;
    backend_.copyToHost(&d, v.data, sizeof d);
    return d;
  }
  float f = 0;
  backend_.copyToHost(&f, v.data, sizeof f);
  return f;
}

} // namespace dtnn::runtime
