// The thread count of the process's one thread pool (OpenMP), which every
// backend's kernels share.
#pragma once

namespace dtnn::runtime {

// How the default thread count was chosen.
struct ThreadChoice {
  int threads = 1;
  int cpus = 1;          // CPUs this process may run on (its affinity mask)
  int busy = 0;          // of those, the ones other processes kept busy at start-up
  bool fromEnv = false;  // OMP_NUM_THREADS gave the count
};

// OMP_NUM_THREADS when it holds a positive count, else the CPUs this process
// may run on (its affinity mask, which mpirun's binding sets) less those that
// other processes kept busy over a short sample at start-up (/proc/stat), at
// least one: a team thread on a busy CPU holds the whole team back at every
// barrier, so a kernel runs slower on both CPUs than on the idle one alone.
// Sampled once per process; later calls return the first answer.
const ThreadChoice &defaultThreadChoice();
// The choice, if something asked for the default already (null otherwise).
const ThreadChoice *defaultThreadChoiceIfMade();
int defaultThreadCount();
// Sets the pool's thread count.
void setThreadCount(int threads);
// The pool's thread count now.
int threadCount();
// Starts the pool's threads now, with an empty parallel region, rather than
// at the first kernel: libgomp exits the process when it cannot start one,
// so a run starts them once it has checked that they have room
// (checkThreadRoom), before anything else takes it.
void startThreadPool();

} // namespace dtnn::runtime
