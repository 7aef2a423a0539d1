// One train step of a deterministic run (`dtnn-run --deterministic`), whose
// checkpoints are the same bytes whatever the rank count and the thread
// count. Every global batch is cut into micro-batches of a fixed size; each
// rank runs the gradient step (@M.grads, from the split-train-step pass) on
// its micro-batches one at a time, with one thread a kernel, so each
// micro-batch's gradient is the same bits wherever it runs. The gradients
// are then summed exactly: converted to 64-bit integers in a fixed-point
// format whose exponent, per tensor, comes from the largest magnitude over
// all micro-batches (a max-allreduce), summed as integers on the rank and
// over the ranks (integer sums do not depend on order), and converted back
// to the mean over micro-batches. The update step (@M.update) then applies
// the optimizer once. Buffers the gradient step writes in place (batch
// norm's running statistics) are restored before each micro-batch and set
// to the same fixed-point mean of what each micro-batch wrote. Batch norm
// normalizes over each micro-batch.
#pragma once

#include "runtime/Communicator.h"
#include "runtime/ModuleRunner.h"
#include "runtime/train/data/Loader.h"

namespace dtnn::runtime {

class DeterministicStep {
public:
  DeterministicStep(ModuleRunner &runner, const ir::Graph &grads, const ir::Graph &update,
                    Communicator &comm, int64_t microBatch);
  // Runs one step on this rank's part of a global batch: whole
  // micro-batches, the first at `batch.offset` in the global batch. Returns
  // the step's outputs (loss, metrics), averaged over this rank's samples.
  Expected<std::vector<double>> run(const Batch &batch, float lr, int64_t step);

private:
  // Sums `values[j]` (the tensors of micro-batch j < used of this rank;
  // `count` micro-batches on all ranks) exactly over every micro-batch into
  // `mean`.
  Error exactMean(const std::vector<std::vector<Tensor>> &values, size_t used, int64_t count,
                  std::vector<Tensor> &mean);

  ModuleRunner &runner_;
  const ir::Graph &grads_, &update_;
  Communicator &comm_;
  int64_t micro_;
  std::vector<std::string> written_; // buffers the gradient step writes in place
  // Kept from step to step: fresh allocations of this size fault in every
  // page, which costs more than the arithmetic.
  std::vector<std::vector<Tensor>> grads_buf_, states_; // per micro-batch
  std::vector<Tensor> before_, gradMean_, stateMean_;
  std::vector<int64_t> fixed_;
};

} // namespace dtnn::runtime
