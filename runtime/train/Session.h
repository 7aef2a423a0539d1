// The state of one dtnn-run session (runtime::train) and the pieces its
// steps share: a staged batch, timings and metric totals. Internal to the
// runtime: Trainer.cpp runs the epochs, SessionSetUp.cpp prepares a run
// (graphs, data, parameters, resume), SessionEval.cpp evaluates and
// predicts, SessionCheckpoint.cpp writes checkpoints and handles signals.
#pragma once

#include "runtime/train/RunOptions.h"

#include "runtime/train/DeterministicStep.h"
#include "runtime/ModuleRunner.h"
#include "runtime/Profile.h"
#include "runtime/train/Report.h"
#include "runtime/train/Schedule.h"
#include "runtime/train/StopVote.h"
#include "runtime/train/TrainState.h"
#include "runtime/train/Trace.h"
#include "runtime/train/data/Sources.h"

#include <chrono>
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace dtnn::runtime::session {

inline double nowSeconds() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

// A batch on its way into the input buffers of the executor that runs it,
// with the learning rate and step count of its train step. It stays at one
// address until its run returns: the copy reads from it. One destroyed
// before it ran (a run that stops early) is withdrawn from its executor
// once the copy is done.
// Class names as a checkpoint stores them, one a line; "" when there are none, or a name is not
// valid UTF-8 or holds a line break.
std::string classList(const std::vector<std::string> &names);

struct StagedBatch {
  Batch batch;
  double dataWait = 0; // seconds the loader kept the run waiting for this batch
  float lr = 0;
  int64_t step = 0;
  Executor *exec = nullptr;
  bool ran = false;
  StagedBatch() = default;
  StagedBatch(const StagedBatch &) = delete;
  StagedBatch &operator=(const StagedBatch &) = delete;
  ~StagedBatch() {
    if (exec && !ran) exec->discardStaged();
  }
};

// Training time and images, for images per second.
// The steps after a run's warm-up measure its speed; a run or an epoch that ends within the
// warm-up is measured by its warm-up steps instead, so that a rate is never missing.
struct Timing {
  double seconds[2] = {0, 0}; // warm-up steps, steps after (waits for data included)
  int64_t samples[2] = {0, 0};
  double dataWait = 0;        // of the steps after warm-up: seconds spent waiting for data
  void add(double dt, int64_t n, bool warmUp = false, double wait = 0) {
    seconds[!warmUp] += dt;
    samples[!warmUp] += n;
    if (!warmUp) dataWait += wait;
  }
  // The share of the steps' time spent waiting for data (after warm-up).
  double dataWaitShare() const { return seconds[1] > 0 ? dataWait / seconds[1] : 0; }
  bool any() const { return samples[0] + samples[1] > 0; }
  double rate() const {
    int k = samples[1] > 0 ? 1 : 0;
    return seconds[k] > 0 ? samples[k] / seconds[k] : 0;
  }
  // The job's time: the slowest rank's (ranks that never wait for each other,
  // as with --skip-comm, may drift apart; the job ends with the last).
  Error slowestOf(Communicator &comm) {
    if (comm.size() == 1) return Error::success();
    return comm.allreduce(seconds, 2, ir::DType::F64, ReduceOp::Max, "reducing the timings");
  }
};

// Sums of the step outputs (loss, metrics) weighted by the labels each batch counts (its
// samples, or a sequence model's positions less the padding), so that a mean is over labels.
struct Totals {
  std::vector<double> sums;
  int64_t samples = 0;
  Timing timing; // of the steps, for images per second
  void add(const std::vector<double> &values, int64_t n) {
    sums.resize(values.size());
    if (n > 0)
      for (size_t i = 0; i < values.size(); ++i) sums[i] += values[i] * n;
    samples += n;
  }
  double mean(size_t i) const { return samples && i < sums.size() ? sums[i] / samples : std::nan(""); }
  // Sums and counts over the ranks of `comm`; the timing stays this rank's.
  Error reduce(Communicator &comm, size_t outputs) {
    std::vector<double> v = sums;
    v.resize(outputs);
    v.push_back(static_cast<double>(samples));
    if (Error e = sumOverRanks(comm, v, "reducing the metrics")) return e;
    samples = static_cast<int64_t>(v.back());
    v.pop_back();
    sums = std::move(v);
    return Error::success();
  }
};

class Session {
public:
  Session(const ir::Module &m, const ir::RunSettings &s, const RunOptions &o,
          const BackendSet &backends, std::ostream &out, std::ostream &err)
      : m_(m), s_(s), o_(o), backends_(backends), backend_(backends.primary()), out_(out),
        err_(err), bar_(out, o.progress, o.progressSeconds),
        ownComm_(o.comm ? nullptr : makeLocalCommunicator()),
        comm_(o.comm ? *o.comm : *ownComm_),
        skipComm_(o.skipComm ? makeSkippingCommunicator(comm_) : nullptr),
        kernelComm_(skipComm_ ? *skipComm_ : comm_) {}

  RunStatus run();
  // The epochs of training, after set-up.
  RunStatus trainEpochs();

private:
  // Finds the graphs, builds the schedule, loads data and parameters.
  Error setUp();
  // Restores parameters and schedule state from --resume.
  Error resume();
  RunStatus evalOnly();
  // Runs the steps of the current epoch up to its end or the step limit.
  RunStatus trainSteps(BatchLoader &loader, int64_t stepsPerEpoch, Totals &train,
                       Timing &epochTiming);
  // The same, one deterministic step at a time (--deterministic).
  RunStatus deterministicSteps(BatchLoader &loader, int64_t stepsPerEpoch, Totals &train,
                               Timing &epochTiming);
  // Counts a step that ran on `b` with outputs `v` in `dt` seconds: progress,
  // the loss check, totals, timing and the progress bar.
  RunStatus countStep(const Batch &b, const std::vector<double> &v, double dt,
                      int64_t stepsPerEpoch, Totals &train, Timing &epochTiming,
                      double dataWait = 0);
  // Evaluates and collects the epoch's figures; sets the monitored loss.
  Expected<EpochRecord> epochRecord(int64_t epoch, const Totals &train, const Timing &timing,
                                    double started, double &monitored);
  // Schedule, early stopping and periodic checkpoint after a whole epoch;
  // true when early stopping ends the run.
  Expected<bool> endEpoch(int64_t epoch, double monitored);
  // Prints the final test accuracy (evaluating if no epoch ran).
  RunStatus finish(double lastTestAcc);
  // Ends a run that a signal interrupted between steps, on every rank alike: rank 0 writes the
  // --save checkpoint and tells the others whether it could; rank 0 says where the run
  // stopped, which rank the signal reached and whether the checkpoint was written; every rank
  // returns 128 + the signal, as a shell reports one.
  RunStatus interrupted(const StopRequest &stop);
  // Asks the ranks whether to stop before the next step; true when they agreed to (stop_).
  Expected<bool> stopBeforeStep();
  // Finishes the vote in flight when the steps end, so that every rank knows stop_.
  RunStatus settleStop();
  // Runs the forward graph (inference: running statistics, no dropout) on the input tensor of
  // --predict and writes its outputs to --predictions.
  RunStatus predict();
  // --predict with an image file or a folder of images: each image as evaluation sees it (the
  // data source's resize, centre crop and normalization), and its five likeliest classes, named
  // by the class map of the checkpoint the weights came from.
  RunStatus predictImages();
  // Samples --generate tokens after the prompt from the forward graph of a model of token
  // sequences, and prints the prompt and what follows it (also to --predictions).
  RunStatus generate();
  // Whether the run computes outputs instead of training (--predict, --generate).
  bool predicting() const { return !o_.predictPath.empty() || o_.generate > 0; }
  // Fails with why the loss of a train step shows the run failed: not finite, or diverged.
  Error lossProblem(double loss) const;
  // Fails with why an evaluation's record shows the model failed: a test or validation loss
  // that is not finite.
  static Error evalProblem(const EpochRecord &r);
  bool stepLimitReached() const { return o_.maxSteps >= 0 && runSteps_ >= o_.maxSteps; }
  Error findGraphs();
  Error loadData();
  // The data's labels, transforms, checks and validation split, once data_ holds it.
  Error prepareData();
  Error checkData(const Dataset &d, const std::string &which);
  // Makes the transforms of training and evaluation samples (the augment setting; image files
  // resized to the model's input) and chooses the data workers.
  Error setUpTransforms();
  // Checks the labels of `d`, one per sample or one per position of the model's prediction.
  Error checkLabels(const Dataset &d, const std::string &which);
  // What run reports for metric i (0 the loss) of totals `t` over data set `d`.
  double metricValue(const Totals &t, size_t i, const Dataset &d) const;
  // Takes the next batch of `loader` and starts copying it into the inputs
  // of the executor of `g` at its size, while an earlier batch may be
  // computing; a train step gets the learning rate and step count of the
  // step `ahead` steps after the next one to run. Null at the end of the
  // epoch.
  Expected<std::unique_ptr<StagedBatch>> stage(BatchLoader &loader, const ir::Graph &g,
                                               bool training, int64_t ahead);
  // Runs a staged batch and reads the graph's scalar outputs.
  Expected<std::vector<double>> runStaged(StagedBatch &b);
  Expected<Totals> evaluate(const std::vector<int64_t> &indices, const Dataset &d);
  // Warns of the images of `set` the log holds beyond the `reported` ones, and counts them.
  void warnBadImages(const BadImageLog &log, int64_t &reported, const char *set);
  Error saveState(const std::string &path);
  // Fails early when a checkpoint could not be written (a missing or read-only folder, a FIFO
  // nobody reads, a name too long).
  Error checkSaveFolder() const;
  // Fails when an output of the run is one of the files it has read.
  Error checkOutputsAreNoInputs() const;
  std::string periodicPath(int64_t epoch) const;
  RunStatus fail(const std::string &message, RunStatus status = RunStatus::InputError) {
    bar_.clear();
    out_ << std::flush;
    if (!quietError_ || leader())
      // One write, so that the lines of ranks sharing mpirun's output do not interleave.
      err_ << ("dtnn-run: " + (ranks() > 1 ? "rank " + std::to_string(rank()) + ": " : "") +
               "error: " + message + "\n")
           << std::flush;
    if (quietError_) {
      // Every rank found it: rank 0 has said it before any rank ends the job.
      float token = 0;
      (void)comm_.allreduce(&token, 1, ir::DType::F32, ReduceOp::Sum, "reporting an error");
    }
    return status;
  }
  int rank() const { return comm_.rank(); }
  int ranks() const { return comm_.size(); }
  bool leader() const { return comm_.rank() == 0; }
  LoaderOptions loaderOptions(bool training) const;
  // Makes every rank start from rank 0's parameters and optimizer state.
  Error broadcastParams();
  // What every rank must agree on before it builds anything: the run's options, each train
  // setting, the data set, the backend and the compiled steps.
  std::vector<AgreedItem> agreedItems() const;
  // Checks that every rank has the same `items` (the same list on every rank); names the
  // first that differs and both values.
  Error checkAgreement(const std::vector<AgreedItem> &items);
  // Checks the micro-batches of a deterministic run and makes its stepper.
  Error setUpDeterministic();
  // Fails, at the end of set-up, when the address-space limit leaves too
  // little for what the run builds later: the plans of the other batch sizes
  // (an epoch's last, partial batch; validation) and the data loaders.
  Error checkRoomForTheRest();
  // Threads a run starts after set-up: the data loaders of training and of
  // an evaluation, and the runner's communication queue.
  static constexpr int kLaterThreads = 3;
  // What the run holds that a message about the address-space limit should
  // name: "52.4 MiB of it for the data set"; "" before the data is loaded.
  std::string heldNote() const;

  const ir::Module &m_;
  const ir::RunSettings &s_;
  const RunOptions &o_;
  const BackendSet &backends_;
  Backend &backend_; // the primary backend
  std::ostream &out_, &err_;
  ProgressBar bar_;

  const ir::Graph *fwd_ = nullptr, *train_ = nullptr, *eval_ = nullptr;
  const ir::Graph *grads_ = nullptr, *update_ = nullptr; // split-train-step's
  std::unique_ptr<DeterministicStep> det_;
  std::unique_ptr<ModuleRunner> runner_;
  std::unique_ptr<StepProfile> profile_; // of the train step at the full batch
  std::unique_ptr<RunTrace> trace_;      // --trace: the run's events
  DataSplits data_;
  std::string dataName_; // the data source, for messages
  std::vector<int64_t> trainIdx_, valIdx_;
  ImageTransform trainTransform_, evalTransform_;
  int64_t evalBadImages_[2] = {0, 0}; // the most unreadable images a test, validation pass met
  int dataWorkers_ = 1;
  std::unique_ptr<LrSchedule> schedule_;
  std::optional<EarlyStopping> early_;
  Progress progress_;
  double lr_ = 0;
  int64_t runSteps_ = 0; // steps of this run (a resumed run counts from 0)
  double firstLoss_ = 0; // the loss of this run's first step
  Timing runTiming_;
  std::unique_ptr<Communicator> ownComm_;
  Communicator &comm_;                    // the ranks: start-up checks, metrics
  std::unique_ptr<Communicator> skipComm_;
  Communicator &kernelComm_;              // the train step's reductions
  std::unique_ptr<StopVote> vote_;        // whether to stop, on a channel of its own
  StopRequest stop_;                      // the stop the ranks agreed on
  bool quietError_ = false; // the error is every rank's: rank 0 alone reports it
};

} // namespace dtnn::runtime::session
