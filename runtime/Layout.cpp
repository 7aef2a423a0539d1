#include "runtime/Layout.h"

#include "runtime/Tensor.h"

namespace dtnn::runtime {

const char *memorySpaceName(MemorySpace s) {
  switch (s) {
  case MemorySpace::Host: return "host";
  case MemorySpace::Device: return "device";
  }
  return "?";
}

Layout Layout::native(std::string backend, std::string tag, std::shared_ptr<const void> desc) {
  Layout l;
  l.backend_ = std::move(backend);
  l.tag_ = std::move(tag);
  l.desc_ = std::move(desc);
  return l;
}

BufferDesc BufferDesc::plain(const ir::TensorType &type, MemorySpace space) {
  BufferDesc d;
  d.type = type;
  d.bytes = byteSize(type);
  d.space = space;
  return d;
}

std::string BufferDesc::str() const {
  std::string s = type.str();
  if (!layout.isPlain()) s += ":" + layout.tag();
  if (space != MemorySpace::Host) s += std::string("@") + memorySpaceName(space);
  return s;
}

} // namespace dtnn::runtime
