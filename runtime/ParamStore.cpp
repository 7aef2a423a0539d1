#include "runtime/ParamStore.h"

#include "runtime/Convert.h"

#include <cassert>

namespace dtnn::runtime {

ParamStore::ParamStore(const ir::Module &m, const BackendSet &backends)
    : module_(m), backends_(backends) {
  for (const auto &p : m.params()) {
    assert(p->type.isStatic() && "parameters have static types");
    BufferDesc d = BufferDesc::plain(p->type, backends_.primary().memorySpace());
    storage_[p->name] = {d, backends_.primary().allocate(d.bytes)};
  }
}

uint64_t ParamStore::bytesNeeded(const ir::Module &m) {
  uint64_t bytes = 0;
  for (const auto &p : m.params()) bytes += byteSize(p->type);
  return bytes;
}

ParamStore::~ParamStore() {
  for (auto &[name, s] : storage_) backends_.primary().release(s.data);
}

TensorView ParamStore::view(const std::string &name) const {
  auto it = storage_.find(name);
  assert(it != storage_.end() && "unknown parameter");
  return {it->second.data, it->second.desc.type};
}

const BufferDesc &ParamStore::desc(const std::string &name) const {
  auto it = storage_.find(name);
  assert(it != storage_.end() && "unknown parameter");
  return it->second.desc;
}

uint64_t ParamStore::bytes() const {
  uint64_t n = 0;
  for (const auto &[name, s] : storage_) n += s.desc.bytes;
  return n;
}

Error ParamStore::setLayout(const std::string &name, const BufferDesc &desc) {
  auto it = storage_.find(name);
  assert(it != storage_.end() && desc.type == it->second.desc.type && "bad parameter layout");
  Slot &s = it->second;
  if (s.desc == desc) return Error::success();
  void *data = backends_.primary().allocate(desc.bytes);
  if (Error e = convertBuffer(backends_, s.desc, s.data, desc, data)) {
    backends_.primary().release(data);
    return Error::make("parameter @" + name + ": " + e.message());
  }
  backends_.primary().release(s.data);
  s = {desc, data};
  ++generation_;
  ++version_;
  return Error::success();
}

Expected<Tensor> ParamStore::read(const std::string &name) const {
  const BufferDesc &d = desc(name);
  Tensor t(d.type);
  if (d.layout.isPlain()) {
    backends_.primary().copyToHost(t.raw(), view(name).data, t.bytes());
    return t;
  }
  if (Error e = convertBuffer(backends_, d, view(name).data, BufferDesc::plain(d.type), t.raw()))
    return Error::make("parameter @" + name + ": " + e.message());
  return t;
}

Error ParamStore::write(const std::string &name, const Tensor &t) {
  const BufferDesc &d = desc(name);
  assert(d.type == t.type() && "parameter type mismatch");
  ++version_;
  if (d.layout.isPlain()) {
    backends_.primary().copyToDevice(view(name).data, t.raw(), t.bytes());
    return Error::success();
  }
  if (Error e = convertBuffer(backends_, BufferDesc::plain(t.type()), t.raw(), d, view(name).data))
    return Error::make("parameter @" + name + ": " + e.message());
  return Error::success();
}

} // namespace dtnn::runtime
