// The communicator: how ranks of a distributed run exchange data. Kernels of
// collective ops reach it through their execution context and call it on
// the communication queue's thread, so a reduction progresses while compute
// kernels run. The one here serves a single process; the MPI and NCCL ones
// implement the same interface.
#pragma once

#include "ir/Error.h"
#include "ir/Types.h"

#include <cstddef>
#include <memory>

namespace dtnn::runtime {

enum class ReduceOp { Sum, Mean };

class Communicator {
public:
  virtual ~Communicator();
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Reduces `count` elements of `dtype` at `data` over all ranks, in place,
  // and returns when done.
  virtual Error allreduce(void *data, size_t count, ir::DType dtype, ReduceOp op) = 0;
};

// One rank alone: reductions leave the data as it is.
std::unique_ptr<Communicator> makeLocalCommunicator();

} // namespace dtnn::runtime
