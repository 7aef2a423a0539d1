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

// Sum adds; Mean adds each rank's data weighted by its share of the step
// (setShare), which is 1/size when every rank holds as many samples; Max
// takes the largest.
enum class ReduceOp { Sum, Mean, Max };

class Communicator {
public:
  virtual ~Communicator();
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Reduces `count` elements of `dtype` at `data` over all ranks, in place,
  // and returns when done. `what` names the collective in timeouts.
  Error allreduce(void *data, size_t count, ir::DType dtype, ReduceOp op,
                  const std::string &what = "allreduce");
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
  // This rank's weight in Mean reductions from now on: the fraction of the
  // step's global batch it holds.
  void setShare(double share) { share_ = share; }
  double share() const { return share_ < 0 ? 1.0 / size() : share_; }

protected:
  // Reduces in place with Sum or Max.
  virtual Error reduce(void *data, size_t count, ir::DType dtype, ReduceOp op,
                       const std::string &what) = 0;

private:
  double share_ = -1; // -1: an equal share
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
