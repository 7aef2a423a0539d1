// Buffer descriptors: how a value of a plan is stored. A value has a logical
// tensor type (the IR's), a layout (plain row-major, or a backend's own
// format such as oneDNN's blocked nChw8c), a size in bytes that includes any
// padding the layout adds, and a memory space.
#pragma once

#include "ir/Types.h"

#include <cstdint>
#include <memory>
#include <string>

namespace dtnn::runtime {

// Where a buffer lives: host memory, or the memory of a device.
enum class MemorySpace { Host, Device };
inline constexpr size_t kMemorySpaces = 2;
const char *memorySpaceName(MemorySpace s);

// A tensor's arrangement in memory. The plain layout is row-major over the
// logical dims, with no padding: the canonical layout of checkpoints,
// initializers and data. A native layout belongs to one backend, which
// names it with a tag that fully determines it for a given logical type
// ("aBcd8b": dims in stride order, capitals blocked, then the inner blocks)
// and keeps its own description of it.
class Layout {
public:
  // The plain layout.
  Layout() = default;
  // A native layout of `backend`, named `tag`, described by `desc` (what the
  // backend needs to rebuild it; it may be null).
  static Layout native(std::string backend, std::string tag, std::shared_ptr<const void> desc);

  bool isPlain() const { return backend_.empty(); }
  // The owning backend's name; empty when plain.
  const std::string &backend() const { return backend_; }
  // The tag; "plain" for the plain layout.
  const std::string &tag() const { return tag_; }
  // The owner's description, or null.
  const void *desc() const { return desc_.get(); }
  template <typename T> const T *descAs() const { return static_cast<const T *>(desc_.get()); }

  // Same owner and tag (so the same arrangement for the same type).
  bool operator==(const Layout &o) const { return backend_ == o.backend_ && tag_ == o.tag_; }
  bool operator!=(const Layout &o) const { return !(*this == o); }

private:
  std::string backend_;
  std::string tag_ = "plain";
  std::shared_ptr<const void> desc_;
};

// How one value of a plan is stored.
struct BufferDesc {
  ir::TensorType type; // static
  Layout layout;
  uint64_t bytes = 0; // with the layout's padding
  MemorySpace space = MemorySpace::Host;

  // A plain buffer of `type` in host memory, or in `space`.
  static BufferDesc plain(const ir::TensorType &type, MemorySpace space = MemorySpace::Host);
  // Same layout, size and space; the types agree too.
  bool operator==(const BufferDesc &o) const {
    return type == o.type && layout == o.layout && bytes == o.bytes && space == o.space;
  }
  bool operator!=(const BufferDesc &o) const { return !(*this == o); }
  // "f32[64,6,28,28]", with ":TAG" for a native layout and "@device" off the host.
  std::string str() const;
};

} // namespace dtnn::runtime
