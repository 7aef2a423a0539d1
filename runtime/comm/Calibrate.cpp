#include "runtime/comm/Calibrate.h"

#include "runtime/Queue.h"

#include <algorithm>
#include <functional>

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

namespace {

// Work for one core that stays in its caches: `rounds` passes of multiply-adds over a small
// array, whose result is returned so that none is left out.
float spin(int64_t rounds) {
  static std::vector<float> a(4096, 1.0f);
  for (int64_t r = 0; r < rounds; ++r)
    for (float &x : a) x = x * 0.999f + 0.001f;
  return a[0];
}

volatile float gSink = 0;

} // namespace

Expected<double> timeHostShare(Communicator &comm, double secondsPerByte) {
  float token = 0;
  auto line = [&]() { return comm.allreduce(&token, 1, ir::DType::F32, ReduceOp::Sum, "calibration"); };
  auto spinFor = [](int64_t rounds) {
    double t0 = monotonicSeconds();
    gSink = spin(rounds);
    return monotonicSeconds() - t0;
  };
  // Rounds that take rank 0 about 80 ms; every rank does the same work.
  int64_t rounds = 1;
  while (spinFor(rounds) < 0.08 && rounds < (int64_t(1) << 40)) rounds *= 2;
  if (Error e = comm.broadcast(&rounds, sizeof rounds, 0, "calibration")) return e;
  if (Error e = line()) return e;
  double work = spinFor(rounds);
  // A reduction of about half the work's time, rank 0's size on every rank.
  double bytes = std::clamp(0.5 * work / std::max(secondsPerByte, 1e-12), 65536.0, 67108864.0);
  if (Error e = comm.broadcast(&bytes, sizeof bytes, 0, "calibration")) return e;
  std::vector<float> data(static_cast<size_t>(bytes / sizeof(float)), 1.0f);
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  // Rounds of the work alone, the reduction alone and both, each started by every rank at
  // once; the slowdown of each round's work, over the median reduction.
  std::vector<double> slowdown, reduce;
  for (int i = 0; i < 7; ++i) {
    if (Error e = line()) return e;
    double alone = spinFor(rounds);
    if (Error e = line()) return e;
    double t0 = monotonicSeconds();
    if (Error e = comm.allreduce(data.data(), data.size(), ir::DType::F32, ReduceOp::Sum,
                                 "calibration"))
      return e;
    reduce.push_back(monotonicSeconds() - t0);
    if (Error e = line()) return e;
    auto h = comm.startAllreduce(data.data(), data.size(), ir::DType::F32, ReduceOp::Sum,
                                 "calibration");
    if (!h) return h.takeError();
    double both = spinFor(rounds);
    if (Error e = comm.waitAllreduce(*h)) return e;
    slowdown.push_back(both - alone);
  }
  double share = std::clamp(median(slowdown) / median(reduce), 0.0, 1.0);
  // The ranks' mean.
  float sum = static_cast<float>(share);
  if (Error e = comm.allreduce(&sum, 1, ir::DType::F32, ReduceOp::Sum, "calibration")) return e;
  return static_cast<double>(sum) / comm.size();
}

} // namespace dtnn::runtime
