#include "runtime/Tensor.h"

#include "runtime/HostMemory.h"

#include <cassert>
#include <cstdlib>
#include <cstring>

namespace dtnn::runtime {

int64_t numElements(const ir::TensorType &t) {
  assert(t.isStatic() && "numElements of a dynamic type");
  return t.staticElements();
}

size_t byteSize(const ir::TensorType &t) {
  return static_cast<size_t>(numElements(t)) * ir::dtypeSize(t.dtype);
}

void Tensor::Free::operator()(void *p) const { std::free(p); }

Tensor::Tensor(ir::TensorType type) : type_(std::move(type)) {
  data_.reset(allocateHostZeroed(byteSize(type_)));
}

Tensor::Tensor(const Tensor &o) : Tensor(o.type_) {
  if (o.data_) std::memcpy(raw(), o.raw(), bytes());
}

Tensor &Tensor::operator=(const Tensor &o) {
  if (this != &o) *this = Tensor(o);
  return *this;
}

} // namespace dtnn::runtime
