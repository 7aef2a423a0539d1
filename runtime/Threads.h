// The thread count of the process's one thread pool (OpenMP), which every
// backend's kernels share.
#pragma once

namespace dtnn::runtime {

// OMP_NUM_THREADS when it holds a positive count, else the number of CPUs
// this process may run on (its affinity mask, which mpirun's binding sets).
int defaultThreadCount();
// Sets the pool's thread count.
void setThreadCount(int threads);
// The pool's thread count now.
int threadCount();

} // namespace dtnn::runtime
