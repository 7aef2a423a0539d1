// The thread count of the process's one thread pool (OpenMP), which every
// backend's kernels share.
#pragma once

#include <string>

namespace dtnn::runtime {

// How the default thread count was chosen.
struct ThreadChoice {
  int threads = 1;
  int cpus = 1;          // CPUs this process may run on (its affinity mask)
  int busy = 0;          // of those, the ones other processes kept busy at start-up
  int sharers = 1;       // ranks of this job on this machine that share those CPUs
  bool fromEnv = false;  // OMP_NUM_THREADS gave the count
};

// OMP_NUM_THREADS when it holds a positive count, else the CPUs this process
// may run on (its affinity mask, which mpirun's binding sets) less those that
// other processes kept busy over a short sample at start-up (/proc/stat),
// divided among the ranks of the job that share them (mpirun --bind-to none),
// at least one: a team thread on a busy CPU holds the whole team back at
// every barrier, so a kernel runs slower on both CPUs than on the idle one
// alone. Sampled once per process; later calls return the first answer.
const ThreadChoice &defaultThreadChoice();
// The choice, if something asked for the default already (null otherwise).
const ThreadChoice *defaultThreadChoiceIfMade();
int defaultThreadCount();
// Sets the pool's thread count.
void setThreadCount(int threads);
// The pool's thread count now.
int threadCount();
// The CPUs this process may run on (its affinity mask), without sampling
// their load: the same on every run on one machine.
int affinityCpuCount();

// When `threads` threads (0: OMP_NUM_THREADS, else the default count, which
// fits by itself) of this process and of the other ranks sharing its CPUs
// would outnumber the CPUs other processes leave free, re-executes the
// process (`argv`) with OMP_WAIT_POLICY=passive: an OpenMP thread that spins at a barrier takes the core from the thread it
// waits for, which made such runs 4 to 28 times slower than one thread.
// libgomp reads the policy when it loads, before main, so setting it later
// would change nothing. Call before MPI and threads start; does nothing when
// the environment sets OMP_WAIT_POLICY or GOMP_SPINCOUNT (the user's choice)
// or the exec fails.
void waitPassivelyIfOversubscribed(char **argv, int threads);

// "" or, in a process that waitPassivelyIfOversubscribed re-executed, why:
// "4 threads on 2 free CPUs".
std::string passiveWaitReason();

// Starts the pool's threads now, with an empty parallel region, rather than
// at the first kernel: libgomp exits the process when it cannot start one,
// so a run starts them once it has checked that they have room
// (checkThreadRoom), before anything else takes it.
void startThreadPool();

} // namespace dtnn::runtime
