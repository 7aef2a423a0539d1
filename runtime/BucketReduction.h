// What every backend's allreduce_start kernel reads from its op and its buffers (the ops of
// ir/ops/Collective.cpp): the reduction's weighting, how it travels, the name messages and
// profiles give it, and the runs of buffers that lie back to back with one element type, which
// it reduces as one message each.
#pragma once

#include "ir/IR.h"
#include "runtime/Communicator.h"
#include "runtime/Kernel.h"

#include <string>
#include <vector>

namespace dtnn::runtime {

// A run of back-to-back buffers: its start, element type and element count.
struct BufferRun {
  void *data = nullptr;
  ir::DType dtype = ir::DType::F32;
  size_t count = 0;
};

class BucketReduction {
public:
  // `in`: the buffers the kernel was planned with (whole buffers, padding included).
  BucketReduction(const ir::Op &start, const std::vector<BufferDesc> &in);

  // The factor this rank's buffers are scaled by before the sum: its share of the global
  // batch for a mean, times the rank count for a deferred one; 1 for a sum.
  double scale(const ExecContext &ctx) const;
  Algorithm algorithm() const { return algorithm_; }
  // "allreduce of bucket 3 (1048576 bytes)".
  const std::string &what() const { return what_; }
  // The runs of the buffers as `args` places them.
  std::vector<BufferRun> runs(const std::vector<TensorView> &args) const;

private:
  std::vector<BufferDesc> in_;
  bool mean_ = true, deferred_ = false;
  Algorithm algorithm_ = Algorithm::Flat;
  std::string what_;
};

} // namespace dtnn::runtime
