// Times blocking allreduces of given bucket sizes, one after the other, as a
// train step would reduce them if it did nothing else: the baseline that
// bench/scaling.py compares a step's exposed communication with.
//
//   mpirun -np 2 build/bin/allreduce_buckets [--repeats N] BYTES[:h]...
//
// A size with ":h" is reduced hierarchically (on several nodes: within each
// node, across them, back within each), as a bucket the cost model sent so.
// Prints the median over N repetitions (default 21, after three warm-up
// runs) of the seconds all buckets take, measured on rank 0.
#include "runtime/comm/Mpi.h"
#include "runtime/Queue.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace dtnn;

int main(int argc, char **argv) {
  int repeats = 21;
  std::vector<size_t> sizes;
  std::vector<runtime::Algorithm> algorithms;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--repeats" && i + 1 < argc)
      repeats = std::max(1, std::atoi(argv[++i]));
    else {
      sizes.push_back(static_cast<size_t>(std::strtoull(a.c_str(), nullptr, 10)));
      algorithms.push_back(a.ends_with(":h") ? runtime::Algorithm::Hierarchical
                                             : runtime::Algorithm::Flat);
    }
  }
  if (sizes.empty()) {
    std::fprintf(stderr, "usage: allreduce_buckets [--repeats N] BYTES[:h]...\n");
    return 2;
  }
  auto comm = runtime::makeMpiCommunicator({});
  if (!comm) {
    std::fprintf(stderr, "allreduce_buckets: %s\n", comm.error().message().c_str());
    return 1;
  }
  std::vector<std::vector<float>> buckets;
  for (size_t s : sizes) buckets.emplace_back(std::max<size_t>(1, s / sizeof(float)), 1.0f);
  std::vector<double> times;
  float token = 0;
  for (int r = 0; r < repeats + 3; ++r) {
    if (Error e = (*comm)->allreduce(&token, 1, ir::DType::F32, runtime::ReduceOp::Sum)) return 1;
    double t0 = runtime::monotonicSeconds();
    for (size_t i = 0; i < buckets.size(); ++i)
      if (Error e = (*comm)->allreduce(buckets[i].data(), buckets[i].size(), ir::DType::F32,
                                       runtime::ReduceOp::Sum, "allreduce", 1, algorithms[i])) {
        std::fprintf(stderr, "allreduce_buckets: %s\n", e.message().c_str());
        return 1;
      }
    if (r >= 3) times.push_back(runtime::monotonicSeconds() - t0);
  }
  std::sort(times.begin(), times.end());
  if ((*comm)->rank() == 0) std::printf("%.9f\n", times[times.size() / 2]);
  return 0;
}
