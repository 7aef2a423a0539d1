#include "runtime/ParamStore.h"

#include <cassert>

namespace dtnn::runtime {

ParamStore::ParamStore(const ir::Module &m, Backend &backend) : module_(m), backend_(backend) {
  for (const auto &p : m.params()) {
    assert(p->type.isStatic() && "parameters have static types");
    storage_[p->name] = {backend_.allocate(byteSize(p->type)), p->type};
  }
}

uint64_t ParamStore::bytesNeeded(const ir::Module &m) {
  uint64_t bytes = 0;
  for (const auto &p : m.params()) bytes += byteSize(p->type);
  return bytes;
}

ParamStore::~ParamStore() {
  for (auto &[name, v] : storage_) backend_.release(v.data);
}

TensorView ParamStore::view(const std::string &name) const {
  auto it = storage_.find(name);
  assert(it != storage_.end() && "unknown parameter");
  return it->second;
}

Tensor ParamStore::read(const std::string &name) const {
  TensorView v = view(name);
  Tensor t(v.type);
  backend_.copyToHost(t.raw(), v.data, t.bytes());
  return t;
}

void ParamStore::write(const std::string &name, const Tensor &t) {
  TensorView v = view(name);
  assert(v.type == t.type() && "parameter type mismatch");
  backend_.copyToDevice(v.data, t.raw(), t.bytes());
}

} // namespace dtnn::runtime
