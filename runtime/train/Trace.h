// A run as a trace (`dtnn-run --trace FILE.json`), in the trace-event format that Perfetto
// (ui.perfetto.dev) and chrome://tracing open: each rank a process ("rank 0", "rank 1", ...)
// with a track per queue (compute, communication, copy), one for the run's phases (epochs,
// evaluation, checkpoints) and one per data worker. The first train steps are recorded kernel
// by kernel (each named by its source layer and backend, with its op and location), layout
// conversions, allreduce starts and waits, and each bucket's flight from start to wait as an
// async slice; every step records what it waited for its batch, and the workers their batches.
// Clocks are aligned when the trace starts (the ranks leave a barrier together); rank 0 gathers
// the ranks' events when the run ends and writes one file.
#pragma once

#include "ir/Error.h"
#include "runtime/Communicator.h"
#include "runtime/Executor.h"

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace dtnn::runtime {

class RunTrace {
public:
  // The tracks of a rank besides its queues' (ids 0-2: compute, communication, copy).
  enum Track { kRun = 3, kData = 4, kWorker = 10 /* + worker */ };

  // Starts a trace that records the kernels of the first `kernelSteps` train steps: a collective
  // (every rank calls it at the same point), which aligns the ranks' clocks.
  static Expected<std::unique_ptr<RunTrace>> start(Communicator &comm, int64_t kernelSteps);

  // Whether the next train step's kernels are wanted (the executor should time them).
  bool wantsKernels() const;
  // The kernels of train step `step` as the executor timed them (Executor::times()).
  void addStep(const Plan &plan, const std::vector<StepTime> &times, int64_t step);
  // A slice [start, end] (monotonicSeconds()) named `name` on `track`; args is a JSON object's
  // members ("\"bytes\": 12") or empty. Thread-safe.
  void addSpan(int track, const std::string &name, const char *category, double start,
               double end, const std::string &args = "");

  // Gathers every rank's events on rank 0, which writes them to `path`: a collective.
  Error finish(Communicator &comm, const std::string &path);

private:
  RunTrace(int rank, double origin, int64_t kernelSteps)
      : rank_(rank), origin_(origin), kernelSteps_(kernelSteps) {}
  // Appends one event (a JSON object without the braces' pid, which write adds).
  void add(std::string event);
  // Microseconds since the origin of time `seconds`, and of a span of `seconds`, as JSON numbers.
  std::string micros(double seconds) const;
  static std::string duration(double seconds);

  int rank_;
  double origin_; // monotonicSeconds() when the ranks left the barrier
  int64_t kernelSteps_;
  std::atomic<int64_t> stepsRecorded_{0}; // read by the data workers' threads too
  std::mutex mutex_;
  std::vector<std::string> events_;
  std::vector<int> workerTracks_;
};

} // namespace dtnn::runtime
