// The arena: one block of a backend's memory that every plan of a run
// places its values in (plans run one at a time, and no value outlives its
// plan's run). It grows to the largest plan; executors rebind their views
// when it moves.
#pragma once

#include "runtime/Backend.h"

#include <cstdint>

namespace dtnn::runtime {

class Arena {
public:
  explicit Arena(Backend &backend) : backend_(backend) {}
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
  Backend &backend_;
  char *base_ = nullptr;
  uint64_t bytes_ = 0;
  uint64_t generation_ = 0;
};

} // namespace dtnn::runtime
