// The MPI communicator: the ranks of an `mpirun` job. Creating it
// initializes MPI (thread-multiple: the compute queue's thread, the
// trainer's and the watchdog's all call MPI); destroying the last one
// finalizes it. A reduction is an MPI_Iallreduce started by one kernel and
// waited for by another, which tests it until it is done, yielding the core
// between tests: a rank with one core lends it to its other threads while
// it waits for the others (a blocking MPI_Allreduce would spin on it).
// Messages move when the executor calls progress() between kernels, in
// waits, and on the watchdog's thread every progressSeconds.
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
  // While reductions are in flight, the watchdog's thread calls into MPI this
  // often, so that messages move while a kernel runs; 0: they move between
  // kernels (the executor calls progress()), in waits, and every 100 ms.
  double progressSeconds = 0.001;
  // A collective whose waits grow past this many times their usual length (and 0.25 s past
  // it), three times in a row, ends the job (runtime/comm/Slowdown.h); 0: never.
  double slowdownFactor = 10;
};

// The world communicator of this job; initializes MPI.
Expected<std::unique_ptr<Communicator>> makeMpiCommunicator(const MpiOptions &opts);

} // namespace dtnn::runtime
