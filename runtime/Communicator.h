// The communicator: how ranks of a distributed run exchange data. Kernels of
// collective ops reach it through their execution context and call it on
// the communication queue's thread, so a reduction progresses while compute
// kernels run; the trainer calls it between steps (start-up checks, metrics).
// The one-rank communicator here serves a process alone; the MPI one
// (runtime/comm/Mpi.h) implements the same interface across processes.
#pragma once

#include "ir/Error.h"
#include "ir/Types.h"

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace dtnn::runtime {

// Sum adds (each rank's data scaled first by the factor it gives, such as
// its share of the step's samples, for a mean); Max takes the largest.
enum class ReduceOp { Sum, Max };

class Communicator {
public:
  virtual ~Communicator();
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Reduces `count` elements of `dtype` at `data` over all ranks, in place,
  // and returns when done; floating-point data is multiplied by `scale`
  // first. `what` names the collective in timeouts.
  Error allreduce(void *data, size_t count, ir::DType dtype, ReduceOp op,
                  const std::string &what = "allreduce", double scale = 1);
  // Starts the same reduction and returns at once with a handle for
  // waitAllreduce; the data must stay untouched until then. A communicator
  // without non-blocking collectives reduces here (the default).
  Expected<uint64_t> startAllreduce(void *data, size_t count, ir::DType dtype, ReduceOp op,
                                    const std::string &what, double scale = 1);
  // Returns when the reduction of `handle` is done.
  virtual Error waitAllreduce(uint64_t handle);
  // Advances the reductions started and not yet waited for; the executor
  // calls it between kernels.
  virtual void progress() {}
  // Copies `bytes` at `data` on rank `root` to `data` on every rank.
  virtual Error broadcast(void *data, size_t bytes, int root, const std::string &what) = 0;
  // Gathers `bytes` from every rank into `out` (size() * bytes), by rank.
  virtual Error allgather(const void *in, size_t bytes, void *out, const std::string &what) = 0;
  // Another channel over the same ranks, whose collectives never mix with
  // this one's (a collective call on every rank).
  virtual Expected<std::unique_ptr<Communicator>> duplicate() = 0;
  // Ends every rank of the job with `status` after this rank reported an
  // error; a one-rank communicator leaves ending to the caller.
  virtual void abortJob(int status) { (void)status; }
protected:
  // Reduces in place with Sum or Max.
  virtual Error reduce(void *data, size_t count, ir::DType dtype, ReduceOp op,
                       const std::string &what) = 0;
  // Multiplies floating-point data by `factor` (1: leaves it).
  static Error scaleData(void *data, size_t count, ir::DType dtype, double factor);
  // Starts reducing in place; by default reduces at once (handle 0).
  virtual Expected<uint64_t> startReduce(void *data, size_t count, ir::DType dtype, ReduceOp op,
                                         const std::string &what);
};

// One rank alone: reductions leave the data as it is.
std::unique_ptr<Communicator> makeLocalCommunicator();

// A communicator that reports the ranks of `real` but skips its reductions
// and broadcasts (the data stays this rank's own): for measuring how much
// communication a step exposes, as the difference in step time.
std::unique_ptr<Communicator> makeSkippingCommunicator(Communicator &real);

// Sums doubles over the ranks of `comm` (metrics, counts), in place.
Error sumOverRanks(Communicator &comm, std::vector<double> &values, const std::string &what);

} // namespace dtnn::runtime
