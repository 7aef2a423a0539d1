// A run of a plan captured once and replayed (a CUDA graph): plans are
// static, so the same launches with the same buffers repeat every step. A
// backend whose queues can record their work offers it (Backend::capture).
#pragma once

#include "ir/Error.h"
#include "runtime/Queue.h"

#include <functional>
#include <memory>

namespace dtnn::runtime {

class CapturedRun {
public:
  virtual ~CapturedRun();
  // Launches the captured work on the queue it was captured from.
  virtual Error replay(Queue &queue) = 0;
};

} // namespace dtnn::runtime
