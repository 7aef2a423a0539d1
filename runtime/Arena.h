// An arena: one block of memory of one space that every plan of a run
// places its values of that space in (plans run one at a time, and no value
// outlives its plan's run). It grows to the largest plan; executors rebind
// their views when it moves. A run has one per memory space.
#pragma once

#include "runtime/Backend.h"

#include <cstdint>

namespace dtnn::runtime {

class Arena {
public:
  // Memory of `backend`, or its host memory (Backend::allocateHost: pinned for a device) when
  // `space` is the host and the backend's own is not.
  Arena(Backend &backend, MemorySpace space) : backend_(backend), space_(space) {}
  ~Arena();
  Arena(const Arena &) = delete;
  Arena &operator=(const Arena &) = delete;

  // Makes the arena at least `bytes` long. Growing reallocates without
  // keeping the contents and changes generation().
  void reserve(uint64_t bytes);
  char *base() const { return base_; }
  uint64_t bytes() const { return bytes_; }
  // Changes whenever base() does.
  uint64_t generation() const { return generation_; }

private:
  void *allocate(uint64_t bytes);
  void release(void *p);
  Backend &backend_;
  MemorySpace space_;
  char *base_ = nullptr;
  uint64_t bytes_ = 0;
  uint64_t generation_ = 0;
};

} // namespace dtnn::runtime
