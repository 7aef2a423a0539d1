// The MPI communicator: the ranks of an `mpirun` job. Creating it
// initializes MPI (thread-multiple: reductions run on the communication
// queue's thread while the trainer's thread and a watchdog use MPI too);
// destroying the last one finalizes it. A reduction is an MPI_Iallreduce
// that the asking thread (the communication queue's) tests until it is done,
// yielding the core between tests: messages progress while kernels compute,
// and a rank with one core lends it to its compute thread while it waits
// for the others (a blocking MPI_Allreduce would spin on it).
//
// The watchdog bounds every collective: one that has not completed after
// the timeout asks every other rank, on a channel of its own, what it is
// doing, names the ranks that do not answer (stopped, hung or dead), prints
// that with the collective's name, and ends the job.
#pragma once

#include "runtime/Communicator.h"

#include <memory>

namespace dtnn::runtime {

// Whether an MPI launcher (mpirun, or a PMIx launcher such as srun) started
// this process.
bool launchedByMpi();

struct MpiOptions {
  double timeoutSeconds = 60; // a collective waiting longer ends the job
};

// The world communicator of this job; initializes MPI.
Expected<std::unique_ptr<Communicator>> makeMpiCommunicator(const MpiOptions &opts);

} // namespace dtnn::runtime
