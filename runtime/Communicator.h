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

// How a reduction travels between ranks. Flat: one ring over every rank.
// Hierarchical: reduced within each node to the node's first rank, then
// reduced over those ranks (one a node), then broadcast within each node, so
// that the links between nodes carry each byte once a node instead of once a
// ring edge. On one node both are the same reduction.
enum class Algorithm { Flat, Hierarchical };
// "flat", "hierarchical".
const char *algorithmName(Algorithm a);
// The algorithm called `name`, or an error naming the choices.
Expected<Algorithm> parseAlgorithm(const std::string &name);

class Communicator {
public:
  virtual ~Communicator();
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // The nodes (machines) the ranks run on, numbered by their first rank:
  // ranks r and s share memory when nodeOf(r) == nodeOf(s). nodeName is the
  // name a node gives itself (its host name).
  virtual int nodeCount() const { return 1; }
  virtual int nodeOf(int rank) const { (void)rank; return 0; }
  virtual std::string nodeName(int rank) const;
  // Reduces `count` elements of `dtype` at `data` over all ranks, in place,
  // and returns when done; floating-point data is multiplied by `scale`
  // first. `what` names the collective in timeouts.
  Error allreduce(void *data, size_t count, ir::DType dtype, ReduceOp op,
                  const std::string &what = "allreduce", double scale = 1,
                  Algorithm algorithm = Algorithm::Flat);
  // Starts the same reduction and returns at once with a handle for
  // waitAllreduce; the data must stay untouched until then. A communicator
  // without non-blocking collectives reduces here (the default).
  Expected<uint64_t> startAllreduce(void *data, size_t count, ir::DType dtype, ReduceOp op,
                                    const std::string &what, double scale = 1,
                                    Algorithm algorithm = Algorithm::Flat);
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
  // A communicator of the ranks that give one `color` (a collective call on
  // every rank), ranked in this one's order; null for a negative color,
  // whose ranks take no part. By default, an error: not every communicator
  // can.
  virtual Expected<std::unique_ptr<Communicator>> split(int color, const std::string &what);
  // Ends every rank of the job with `status` after this rank reported an
  // error; a one-rank communicator leaves ending to the caller.
  virtual void abortJob(int status) { (void)status; }
protected:
  // Reduces in place with Sum or Max.
  virtual Error reduce(void *data, size_t count, ir::DType dtype, ReduceOp op,
                       const std::string &what, Algorithm algorithm) = 0;
  // Multiplies floating-point data by `factor` (1: leaves it).
  static Error scaleData(void *data, size_t count, ir::DType dtype, double factor);
  // Starts reducing in place; by default reduces at once (handle 0).
  virtual Expected<uint64_t> startReduce(void *data, size_t count, ir::DType dtype, ReduceOp op,
                                         const std::string &what, Algorithm algorithm);
};

// One rank alone: reductions leave the data as it is.
std::unique_ptr<Communicator> makeLocalCommunicator();

// This machine's host name ("localhost" when it has none).
std::string hostName();

// A communicator that reports the ranks of `real` but skips its reductions
// and broadcasts (the data stays this rank's own): for measuring how much
// communication a step exposes, as the difference in step time.
std::unique_ptr<Communicator> makeSkippingCommunicator(Communicator &real);

// Sums doubles over the ranks of `comm` (metrics, counts), in place.
Error sumOverRanks(Communicator &comm, std::vector<double> &values, const std::string &what);

} // namespace dtnn::runtime
