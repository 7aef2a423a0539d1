// The executor: runs a plan's steps over the run's arenas and parameters.
// Each step is launched on its kernel's queue (a backend's compute queue, or
// the communication queue) after that queue is made to wait for the events
// of the steps on other queues it depends on (the producers of what it
// reads, the earlier readers of what it writes), so work on different queues
// overlaps wherever the dependencies allow; between streams of a device the
// wait is the device's own (runtime/Queue.h). Inputs are double-buffered: the
// next run's inputs are copied in on the copy queue while a run computes
// (from pinned host memory, for a device). A plan whose every step runs on a
// device backend that can record its work is captured once, after a first
// run, and replayed from then on (with replays on).
#pragma once

#include "runtime/Arena.h"
#include "runtime/Communicator.h"
#include "runtime/ParamStore.h"
#include "runtime/plan/Plan.h"

#include <array>

namespace dtnn::runtime {

// What plans run against: shared by the executors of a run.
struct ExecServices {
  // The arena of each memory space (null for a space no backend of the run has).
  std::array<Arena *, kMemorySpaces> arenas{};
  ParamStore &params;
  const BackendSet &backends;
  Communicator *comm = nullptr; // for collectives on the communication queue
  Queue *commQueue = nullptr;   // where collectives run
  // For kernels on other queues that take part in a collective themselves
  // (synchronized batch norm): a channel of its own, so that its
  // collectives never interleave with the communication queue's.
  Communicator *computeComm = nullptr;
  // Whether plans that can be replayed are (CUDA graphs; `--no-cuda-graph` turns it off).
  bool replay = true;
};

// When one step ran, in monotonicSeconds(), with profiling on.
struct StepTime {
  double start = 0, end = 0;
};

class Executor {
public:
  Executor(const Plan &plan, ExecServices services);
  ~Executor();
  Executor(const Executor &) = delete;
  Executor &operator=(const Executor &) = delete;

  const Plan &plan() const { return plan_; }
  // Starts copying host data into the input buffers of a coming run, on the
  // copy queue: `data[i]` holds graph input i (its type's size) and must stay
  // valid until the run that uses it returns. Runs use staged inputs oldest
  // first; at most two may wait, so stage at most one run ahead. Returns
  // the event of the copy.
  Event stageInputs(const std::vector<const void *> &data);
  // Forgets the inputs staged last, which no run will use, once their copy
  // is done.
  void discardStaged();
  // Copies input i for the next run now; the other inputs stay as staged.
  void setInput(size_t i, const void *host, size_t bytes);
  // Runs every step once with the oldest staged inputs and waits until all
  // of them finished; the first failure comes back.
  Error run();
  // This rank's part of the global batch in the runs from now on.
  void setPart(StepPart part) { part_ = part; }
  // Records each step's start and end in the runs from now on (steps then
  // run one by one, never from a replay).
  void setProfiling(bool on) { profiling_ = on; }
  // The steps' times in the last run (empty without profiling).
  const std::vector<StepTime> &times() const { return times_; }
  // Whether the last run replayed a recorded one.
  bool replayed() const { return replayed_; }

  // Copies graph output i of the last run to the host.
  Tensor output(size_t i) const;
  // The same into `into`, whose storage is reused when its type fits.
  void copyOutput(size_t i, Tensor &into) const;
  // Reads a scalar f32 or f64 output as a double.
  double scalarOutput(size_t i) const;

private:
  struct Launch {
    Queue *queue = nullptr;
    std::vector<int> waitFor; // steps on other queues to wait for
    bool recordEvent = false; // a step on another queue waits for this one
    bool readsInputs = false;
  };
  void planLaunches();
  void bindArgs();
  uint64_t boundKey() const;
  TensorView view(int valueId, int slot) const;
  Error describe(const PlanStep &s, const Error &e) const;
  // Launches the steps with the inputs of `slot`; waits for the staged inputs unless a recording
  // is being made (whose replay waits for them first).
  void submitSteps(int slot, bool refresh, bool recording);
  // Waits for every queue, tracing an asynchronous fault to its step.
  Error finish();
  bool replayable() const;
  Error replayOrRecord(int slot);
  void recordDeviceTimes();
  void copyToHost(int valueId, void *host, size_t bytes) const;

  const Plan &plan_;
  ExecServices s_;
  std::vector<Launch> launches_;
  std::vector<Queue *> queues_; // the queues the steps use, in order of first use
  std::vector<Event> events_;   // of the last run, for the steps others wait for
  std::vector<std::unique_ptr<ExecContext>> contexts_;
  // Two slots of input buffers (in the primary backend's memory), and for a
  // device, pinned host buffers the inputs are staged through; `staged_`
  // counts the slots holding the inputs of coming runs, from `head_` on.
  std::array<std::vector<void *>, 2> inputs_, staging_;
  std::array<Event, 2> inputReady_;
  int head_ = 0, staged_ = 0;
  int lastSlot_ = 0; // the slot the last run read
  // Kernel arguments for each input slot, built for one arena generation.
  std::array<std::vector<KernelArgs>, 2> args_;
  uint64_t boundKey_ = UINT64_MAX;
  // The results of the plan's `once` steps in each memory space, and the
  // parameters' version they were computed from.
  std::array<void *, kMemorySpaces> cache_{};
  uint64_t cachedVersion_ = UINT64_MAX;
  bool profiling_ = false;
  StepPart part_;
  std::vector<StepTime> times_;
  // Where each step's work stands in its queue's count (Queue::submitted) in the last run, to
  // trace an asynchronous fault; -1 on queues that cannot tell.
  std::vector<int64_t> workNumber_;
  // Device events around each step, for the profile.
  std::vector<std::pair<Event, Event>> deviceTimes_;
  // The recorded run of each input slot, the arguments it was recorded with, and whether the
  // first (unrecorded) run happened.
  std::array<std::unique_ptr<CapturedRun>, 2> recorded_;
  std::array<uint64_t, 2> recordedKey_{UINT64_MAX, UINT64_MAX};
  // The part of the batch each recording was made for: kernels read it when they are launched
  // (dropout's first sample, a loss's share), so a recording serves that part only.
  std::array<StepPart, 2> recordedPart_;
  bool warmedUp_ = false, replayed_ = false, replayFailed_ = false;
};

} // namespace dtnn::runtime
