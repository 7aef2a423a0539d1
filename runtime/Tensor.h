// Tensors as the runtime sees them: a host tensor that owns its storage, and
// a view (pointer + static type) that kernels read and write.
#pragma once

#include "ir/Types.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace dtnn::runtime {

// Number of elements of a static type.
int64_t numElements(const ir::TensorType &t);
// Storage size in bytes of a static type.
size_t byteSize(const ir::TensorType &t);

// Storage of one tensor somewhere a backend can reach, with its static type.
struct TensorView {
  void *data = nullptr;
  ir::TensorType type;

  template <typename T> T *as() const { return static_cast<T *>(data); }
  int64_t numel() const { return numElements(type); }
  int64_t dim(size_t i) const { return type.dims[i]; }
  size_t rank() const { return type.rank(); }
};

// A host tensor with zero-initialized, 64-byte aligned storage.
class Tensor {
public:
  Tensor() = default;
  explicit Tensor(ir::TensorType type);
  // Copies are deep; moves take the storage.
  Tensor(const Tensor &o);
  Tensor &operator=(const Tensor &o);
  Tensor(Tensor &&) = default;
  Tensor &operator=(Tensor &&) = default;

  const ir::TensorType &type() const { return type_; }
  int64_t numel() const { return numElements(type_); }
  size_t bytes() const { return byteSize(type_); }
  void *raw() { return data_.get(); }
  const void *raw() const { return data_.get(); }
  template <typename T> T *data() { return static_cast<T *>(raw()); }
  template <typename T> const T *data() const { return static_cast<const T *>(raw()); }
  TensorView view() { return {raw(), type_}; }

  // A copy with its own storage (the same as copying).
  Tensor clone() const { return *this; }

private:
  struct Free {
    void operator()(void *p) const;
  };
  ir::TensorType type_;
  std::unique_ptr<void, Free> data_;
};

} // namespace dtnn::runtime
