#include "runtime/comm/Calibrate.h"

#include "runtime/Queue.h"

#include <algorithm>

namespace dtnn::runtime {

Expected<std::vector<AllreduceTiming>> timeAllreduces(Communicator &comm, double maxBytes,
                                                      int repeats) {
  std::vector<AllreduceTiming> out;
  float token = 0;
  for (double bytes = 4096; bytes <= maxBytes; bytes *= 4) {
    std::vector<float> data(static_cast<size_t>(bytes / sizeof(float)), 1.0f);
    std::vector<double> times;
    for (int i = 0; i < repeats + 2; ++i) {
      // Lines the ranks up, so that each time is of the reduction alone.
      if (Error e = comm.allreduce(&token, 1, ir::DType::F32, ReduceOp::Sum, "calibration"))
        return e;
      double t0 = monotonicSeconds();
      if (Error e = comm.allreduce(data.data(), data.size(), ir::DType::F32, ReduceOp::Sum,
                                   "calibration"))
        return e;
      if (i >= 2) times.push_back(monotonicSeconds() - t0);
    }
    // The fastest repetition: what the network can do; slower ones measure
    // whatever else the machine was doing.
    double best = *std::min_element(times.begin(), times.end());
    // Every rank reports rank 0's figure.
    if (Error e = comm.broadcast(&best, sizeof best, 0, "calibration")) return e;
    out.push_back({bytes, best});
  }
  return out;
}

} // namespace dtnn::runtime
