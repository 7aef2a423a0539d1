#include "runtime/Trainer.h"

#include "runtime/AtomicFile.h"
#include "runtime/Checkpoint.h"
#include "runtime/DeterministicStep.h"
#include "runtime/HostMemory.h"
#include "runtime/Interrupt.h"
#include "runtime/ModuleRunner.h"
#include "runtime/Profile.h"
#include "runtime/Threads.h"
#include "runtime/Report.h"
#include "runtime/Schedule.h"
#include "runtime/TrainState.h"
#include "runtime/data/Sources.h"
#include "ir/Attributes.h"
#include "ir/Printer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <sstream>

namespace dtnn::runtime {

namespace {

double nowSeconds() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

// A batch on its way into the input buffers of the executor that runs it,
// with the learning rate and step count of its train step. It stays at one
// address until its run returns: the copy reads from it. One destroyed
// before it ran (a run that stops early) is withdrawn from its executor
// once the copy is done.
struct StagedBatch {
  Batch batch;
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
  double seconds[2] = {0, 0}; // warm-up steps, steps after
  int64_t samples[2] = {0, 0};
  void add(double dt, int64_t n, bool warmUp = false) {
    seconds[!warmUp] += dt;
    samples[!warmUp] += n;
  }
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

// Sums of the step outputs (loss, metrics) weighted by batch size.
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
                      int64_t stepsPerEpoch, Totals &train, Timing &epochTiming);
  // Evaluates and collects the epoch's figures; sets the monitored loss.
  Expected<EpochRecord> epochRecord(int64_t epoch, const Totals &train, const Timing &timing,
                                    double started, double &monitored);
  // Schedule, early stopping and periodic checkpoint after a whole epoch;
  // true when early stopping ends the run.
  Expected<bool> endEpoch(int64_t epoch, double monitored);
  // Prints the final test accuracy (evaluating if no epoch ran).
  RunStatus finish(double lastTestAcc);
  // Ends a run that a signal interrupted between steps: writes the --save checkpoint, says
  // where the run stopped and returns 128 + sig, as a shell reports a signal.
  RunStatus interrupted(int sig);
  // Runs the forward graph (inference: running statistics, no dropout) on the input tensor of
  // --predict and writes its outputs to --predictions.
  RunStatus predict();
  // "" or why the loss of a train step shows the run failed: not finite, or diverged.
  std::string lossProblem(double loss) const;
  // "" or why an evaluation's record shows the model failed: a test or validation loss
  // that is not finite.
  static std::string evalProblem(const EpochRecord &r);
  bool stepLimitReached() const { return o_.maxSteps >= 0 && runSteps_ >= o_.maxSteps; }
  Error findGraphs();
  Error loadData();
  Error checkData(const Dataset &d, const std::string &which);
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
  Error saveState(const std::string &path);
  // Fails early when the folder that checkpoints go to does not exist.
  Error checkSaveFolder() const;
  std::string periodicPath(int64_t epoch) const;
  RunStatus fail(const std::string &message, RunStatus status = RunStatus::InputError) {
    bar_.clear();
    out_ << std::flush;
    if (!quietError_ || leader())
      err_ << "dtnn-run: " << (ranks() > 1 ? "rank " + std::to_string(rank()) + ": " : "")
           << "error: " << message << "\n" << std::flush;
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
  // Checks that every rank compiled the same program for the same data.
  Error compareFingerprints();
  // Checks the micro-batches of a deterministic run and makes its stepper.
  Error setUpDeterministic();

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
  DataSplits data_;
  std::string dataName_; // the data source, for messages
  std::vector<int64_t> trainIdx_, valIdx_;
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
  bool quietError_ = false; // the error is every rank's: rank 0 alone reports it
};

Error Session::findGraphs() {
  for (const auto &g : m_.graphs()) {
    if (g->name().ends_with(".train"))
      train_ = g.get();
    else if (g->name().ends_with(".grads"))
      grads_ = g.get();
    else if (g->name().ends_with(".update"))
      update_ = g.get();
    else if (g->name().ends_with(".eval"))
      eval_ = g.get();
    else
      fwd_ = g.get();
  }
  // --predict runs the forward graph alone.
  if (!fwd_ || (o_.predictPath.empty() && (!train_ || !eval_)))
    return Error::make("the module lacks a forward, train or eval graph (run the autodiff pass)");
  if (fwd_->inputs().size() != 1)
    return Error::make("model '" + fwd_->name() + "' takes " +
                       std::to_string(fwd_->inputs().size()) +
                       " inputs; dtnn-run trains models with one image input");
  const ir::TensorType &in = fwd_->inputs()[0]->type();
  if (in.dtype != ir::DType::F32)
    return Error::make("model input must be f32, got " + in.str());
  return Error::success();
}

Error Session::checkData(const Dataset &d, const std::string &which) {
  // An empty set would train no step, or average over no sample, and report nan.
  if (d.count == 0) return Error::make(data_.description + ": the " + which + " set is empty");
  const ir::TensorType &in = fwd_->inputs()[0]->type();
  std::vector<int64_t> want(in.dims.begin() + 1, in.dims.end());
  if (d.sampleShape != want) {
    std::string got;
    for (int64_t x : d.sampleShape) {
      if (!got.empty()) got += 'x';
      got += std::to_string(x);
    }
    return Error::make(dataName_ + ": " + which + " images are " + got +
                       ", but model '" + fwd_->name() + "' takes " + in.str());
  }
  const ir::TensorType &outT = fwd_->outputs()[0]->type();
  int64_t classes = outT.rank() == 2 ? outT.dims[1] : 0;
  for (int64_t i = 0; i < d.count; ++i)
    if (d.labels[i] < 0 || d.labels[i] >= classes)
      return Error::make(dataName_ + ": " + which + " label " +
                         std::to_string(d.labels[i]) + " of sample " + std::to_string(i) +
                         " is out of range for model '" + fwd_->name() + "' with " +
                         std::to_string(classes) + " outputs");
  return Error::success();
}

Error Session::loadData() {
  DataSpec spec = s_.data;
  if (o_.synthetic) {
    const ir::TensorType &in = fwd_->inputs()[0]->type();
    const ir::TensorType &outT = fwd_->outputs()[0]->type();
    spec = {"synthetic", {}};
    spec.args.set("shape", std::vector<int64_t>(in.dims.begin() + 1, in.dims.end()));
    if (outT.rank() == 2) spec.args.set("classes", outT.dims[1]);
    for (const auto &[k, v] : s_.data.args.entries())
      if (s_.data.name == "synthetic") spec.args.set(k, v);
    if (o_.syntheticTrain > 0) spec.args.set("train_size", o_.syntheticTrain);
    if (o_.syntheticTest > 0) spec.args.set("test_size", o_.syntheticTest);
  }
  dataName_ = spec.name;
  auto d = dtnn::loadData(spec, o_.synthetic ? "" : o_.dataDir, s_.seed);
  if (!d) return d.takeError();
  data_ = std::move(*d);
  if (Error e = checkData(data_.train, "training")) return e;
  if (Error e = checkData(data_.test, "test")) return e;
  auto [trainIdx, valIdx] = splitValidation(data_.train.count, s_.validation, s_.seed);
  trainIdx_ = std::move(trainIdx);
  valIdx_ = std::move(valIdx);
  if (trainIdx_.empty() && !o_.evalOnly)
    return Error::make(data_.description + ": no training samples are left after the " +
                       std::to_string(valIdx_.size()) + " held out for validation");
  return Error::success();
}

Expected<std::unique_ptr<StagedBatch>> Session::stage(BatchLoader &loader, const ir::Graph &g,
                                                      bool training, int64_t ahead) {
  auto b = std::make_unique<StagedBatch>();
  if (!loader.next(b->batch)) return std::unique_ptr<StagedBatch>();
  auto exec = runner_->executor(g, b->batch.size);
  if (!exec) return exec.takeError();
  b->exec = *exec;
  std::vector<const void *> data = {b->batch.images.data(), b->batch.labels.data()};
  if (training) {
    b->lr = static_cast<float>(schedule_->lr(progress_.epoch, progress_.stepInEpoch + ahead,
                                             loader.batchesPerEpoch()));
    b->step = progress_.step + 1 + ahead;
    data.push_back(&b->lr);
    data.push_back(&b->step);
  }
  b->exec->stageInputs(data);
  return b;
}

Expected<std::vector<double>> Session::runStaged(StagedBatch &b) {
  b.ran = true;
  // Each rank's gradient counts by its part of the global batch.
  const Batch &batch = b.batch;
  b.exec->setPart({batch.globalSize ? double(batch.samples) / double(batch.globalSize) : 0,
                   batch.offset});
  if (Error e = b.exec->run()) return e;
  std::vector<double> values;
  for (size_t i = 0; i < b.exec->plan().outputs.size(); ++i)
    values.push_back(b.exec->scalarOutput(i));
  return values;
}

Expected<Totals> Session::evaluate(const std::vector<int64_t> &indices, const Dataset &d) {
  BatchLoader loader(d, indices, loaderOptions(false));
  loader.startEpoch(0);
  Totals t;
  auto next = stage(loader, *eval_, false, 0);
  for (int64_t k = 0; next && *next; ++k) {
    std::unique_ptr<StagedBatch> cur = std::move(*next);
    next = stage(loader, *eval_, false, 0);
    double t0 = nowSeconds();
    auto v = runStaged(*cur);
    if (!v) return v.takeError();
    t.timing.add(nowSeconds() - t0, cur->batch.globalSize, k == 0); // the first batch warms up
    t.add(*v, cur->batch.samples);
  }
  if (!next) return next.takeError();
  if (Error e = t.reduce(comm_, eval_->outputs().size())) return e;
  if (Error e = t.timing.slowestOf(comm_)) return e;
  return t;
}

std::string Session::periodicPath(int64_t epoch) const {
  namespace fs = std::filesystem;
  fs::path base = o_.savePath.empty() ? fs::path(fwd_->name() + ".safetensors") : fs::path(o_.savePath);
  fs::path ext = base.extension().empty() ? fs::path(".safetensors") : base.extension();
  return (base.parent_path() / base.stem()).string() + ".epoch" + std::to_string(epoch) +
         ext.string();
}

Error Session::checkSaveFolder() const {
  namespace fs = std::filesystem;
  if (!leader() || (o_.savePath.empty() && s_.checkpointEvery == 0)) return Error::success();
  fs::path folder = fs::path(periodicPath(1)).parent_path();
  if (folder.empty()) folder = ".";
  std::error_code ec;
  if (!fs::is_directory(folder, ec))
    return Error::make("cannot write checkpoints to '" + folder.string() +
                       "': no such folder (checked before training)");
  if (!o_.savePath.empty() && fs::exists(o_.savePath, ec) &&
      !fs::is_regular_file(o_.savePath, ec))
    return Error::make("cannot write a checkpoint to '" + o_.savePath +
                       "': not a regular file (checked before training)");
  // The longest periodic name is the last epoch's.
  for (const std::string &path : {o_.savePath, s_.checkpointEvery > 0 ? periodicPath(s_.epochs) : ""})
    if (!path.empty())
      if (Error e = checkWritableAtomically(path))
        return Error::make("cannot write a checkpoint: " + e.message() + " (checked before training)");
  return Error::success();
}

Error Session::saveState(const std::string &path) {
  if (!leader()) return Error::success();
  std::map<std::string, std::string> meta = {{"seed", std::to_string(s_.seed)},
                                             {"optimizer", s_.optimizer.name},
                                             {"loss", s_.loss.name},
                                             {"batch", std::to_string(s_.batch)},
                                             {"train_samples", std::to_string(trainIdx_.size())}};
  for (const auto &[k, v] : schedule_->state()) meta["schedule." + k] = v;
  if (early_)
    for (const auto &[k, v] : early_->state()) meta["early_stopping." + k] = v;
  return saveTrainState(path, fwd_->name(), runner_->params(), progress_, meta);
}

LoaderOptions Session::loaderOptions(bool training) const {
  LoaderOptions lo;
  lo.batch = s_.batch;
  lo.norm = data_.norm;
  lo.prefetch = o_.prefetch;
  lo.rank = rank();
  lo.ranks = ranks();
  lo.shuffle = training;
  lo.seed = s_.seed;
  if (training) {
    // A last batch that leaves a rank fewer than two samples is dropped when
    // batch norm trains: it cannot normalize a single sample.
    // Synchronized batch norm normalizes over the global batch.
    bool local = false, sync = false;
    for (const auto &op : train_->ops())
      if (op->name() == "batchnorm_train") (op->attrs().getBool("sync") ? sync : local) = true;
    int64_t rest = static_cast<int64_t>(trainIdx_.size()) % s_.batch;
    lo.dropLast = (local && rest > 0 && rest / ranks() < 2) || (sync && rest == 1);
    // A deterministic run takes whole batches only, the same for every rank count.
    if (o_.deterministic) lo.dropLast = true;
  }
  return lo;
}

Error Session::broadcastParams() {
  if (ranks() == 1) return Error::success();
  for (const auto &p : m_.params()) {
    TensorView v = runner_->params().view(p->name);
    size_t bytes = static_cast<size_t>(v.numel()) * ir::dtypeSize(v.type.dtype);
    if (Error e = comm_.broadcast(v.data, bytes, 0, "broadcasting @" + p->name + " from rank 0"))
      return e;
  }
  runner_->params().touch();
  return Error::success();
}

namespace {
uint64_t fnv1a(const std::string &text, uint64_t h = 1469598103934665603ull) {
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  return h;
}
} // namespace

Error Session::compareFingerprints() {
  if (ranks() == 1) return Error::success();
  std::ostringstream program;
  ir::printModule(m_, program);
  std::string data = data_.description + " " + std::to_string(data_.train.count) + " " +
                     std::to_string(data_.test.count) + " " + std::to_string(trainIdx_.size());
  for (const Dataset *d : {&data_.train, &data_.test})
    data += std::string(reinterpret_cast<const char *>(d->labels.data()),
                        d->labels.size() * sizeof(d->labels[0]));
  const std::vector<std::pair<std::string, std::string>> parts = {
      {"the compiled train and eval steps (model, passes, train settings)", program.str()},
      {"the run's settings (seed, batch, epochs, validation)",
       std::to_string(s_.seed) + " " + std::to_string(s_.batch) + " " +
           std::to_string(s_.epochs) + " " + std::to_string(s_.validation) + " " +
           std::to_string(o_.maxSteps)},
      {"the data set", data},
      {"the kernel backend", std::string(backend_.name())},
  };
  std::vector<uint64_t> mine;
  for (const auto &[what, text] : parts) mine.push_back(fnv1a(text));
  std::vector<uint64_t> all(mine.size() * ranks());
  if (Error e = comm_.allgather(mine.data(), mine.size() * sizeof(uint64_t), all.data(),
                                "comparing the ranks' programs at start-up"))
    return e;
  for (size_t k = 0; k < parts.size(); ++k)
    for (int r = 1; r < ranks(); ++r)
      if (all[r * mine.size() + k] != all[k]) {
        quietError_ = true;
        return Error::make("rank " + std::to_string(r) + " and rank 0 differ in " +
                           parts[k].first +
                           "; every rank must run the same command on the same files");
      }
  return Error::success();
}

Error Session::setUpDeterministic() {
  if (!grads_ || !update_)
    return Error::make("a deterministic run needs the gradient and update steps of the "
                       "split-train-step pass");
  int64_t m = o_.microBatch;
  if (m < 1 || s_.batch % m != 0)
    return Error::make("--deterministic cuts each batch into micro-batches of " +
                       std::to_string(m) + ", which does not divide the batch of " +
                       std::to_string(s_.batch) + "; choose --micro-batch or --batch to fit");
  if ((s_.batch / m) % ranks() != 0)
    return Error::make("--deterministic: the " + std::to_string(s_.batch / m) +
                       " micro-batches of " + std::to_string(m) + " in a batch of " +
                       std::to_string(s_.batch) + " do not divide among " +
                       std::to_string(ranks()) + " ranks; choose the rank count, --batch or "
                       "--micro-batch so that they do");
  if (static_cast<int64_t>(trainIdx_.size()) < s_.batch)
    return Error::make("--deterministic takes whole batches, and the training set has fewer "
                       "than " + std::to_string(s_.batch) + " samples");
  // oneDNN gives the same bits only for the same shapes and thread count.
  setThreadCount(1);
  det_ = std::make_unique<DeterministicStep>(*runner_, *grads_, *update_, comm_, m);
  if (!o_.evalOnly) {
    auto exec = runner_->executor(*grads_, m);
    if (!exec) return exec.takeError();
  }
  return Error::success();
}

Error Session::setUp() {
  if (Error e = findGraphs()) return e;
  auto sched = makeSchedule(s_.schedule, s_.lr, s_.epochs);
  if (!sched) return sched.takeError();
  schedule_ = std::move(*sched);
  if (s_.earlyStopping) {
    auto es = makeEarlyStopping(*s_.earlyStopping);
    if (!es) return es.takeError();
    early_ = *es;
  }
  if (Error e = checkSaveFolder()) return e;
  if (Error e = checkThreadHeadroom(threadCount())) return e;
  if (Error e = checkFits(ParamStore::bytesNeeded(m_), backend_.memoryBytes(),
                          "the parameters and optimizer state of model '" + fwd_->name() + "' need",
                          memoryOwner(backend_)))
    return e;
  if (o_.predictPath.empty())
    if (Error e = loadData()) return e;
  runner_ = std::make_unique<ModuleRunner>(m_, backends_, &kernelComm_);
  if (runner_->setUpError()) return runner_->setUpError();
  if (Error e = initializeParams(runner_->params(), s_.seed)) return e;
  if (!o_.resumePath.empty())
    if (Error e = resume()) return e;
  if (!o_.initFromPath.empty()) {
    // The forward graph's parameters: weights and running statistics, not optimizer state.
    std::set<std::string> weights;
    for (const auto &op : fwd_->ops())
      for (const ir::Value *v : op->operands())
        if (v->param()) weights.insert(v->param()->name);
    if (Error e = loadWeights(o_.initFromPath, weights, runner_->params())) return e;
  }
  if (Error e = compareFingerprints()) return e;
  if (Error e = broadcastParams()) return e;
  if (!o_.predictPath.empty()) return Error::success();
  // The train step is planned first, so that its kernels choose the
  // parameters' layouts; the eval step converts where it wants others.
  // This rank's part of the first global batch.
  int64_t global = std::min<int64_t>(s_.batch, static_cast<int64_t>(trainIdx_.size()));
  int64_t first = std::max<int64_t>(1, global * (rank() + 1) / ranks() - global * rank() / ranks());
  if (o_.deterministic) return setUpDeterministic();
  if (!o_.evalOnly && global > 0) {
    auto exec = runner_->executor(*train_, first);
    if (!exec) return exec.takeError();
    if (o_.profile) {
      (*exec)->setProfiling(true);
      profile_ = std::make_unique<StepProfile>((*exec)->plan());
    }
  }
  return Error::success();
}

Error Session::resume() {
  auto meta = loadTrainState(o_.resumePath, fwd_->name(), runner_->params(), progress_);
  if (!meta) return meta.takeError();
  // The seed fixes the shuffle, the validation split and the dropout masks,
  // so a run resumed with another one would not continue the same run.
  for (auto [key, value] : {std::pair{"seed", std::to_string(s_.seed)},
                            std::pair{"optimizer", s_.optimizer.name}, std::pair{"loss", s_.loss.name}}) {
    auto it = meta->find(key);
    if (it != meta->end() && it->second != value)
      return Error::make(o_.resumePath + ": checkpoint was trained with " + key + " " +
                         it->second + ", this run uses " + value + "; set " + key + " to " +
                         it->second + " to resume it");
  }
  // A checkpoint written mid-epoch continues the epoch's batch sequence, which the batch size
  // and the training set fix: with others the rest of the epoch would skip or repeat samples.
  auto say = [](const std::string &key, const std::string &v) {
    return key == "batch" ? "a batch of " + v : v + " training samples";
  };
  if (progress_.stepInEpoch > 0)
    for (auto [key, value] : {std::pair{"batch", std::to_string(s_.batch)},
                              std::pair{"train_samples", std::to_string(trainIdx_.size())}}) {
      auto it = meta->find(key);
      if (it != meta->end() && it->second != value)
        return Error::make(o_.resumePath + ": checkpoint stopped in the middle of epoch " +
                           std::to_string(progress_.epoch + 1) + " (after step " +
                           std::to_string(progress_.stepInEpoch) + ") with " + say(key, it->second) +
                           ", this run has " + say(key, value) + "; resuming it would skip or "
                           "repeat samples. Resume with the same batch and data, or from a "
                           "checkpoint written at the end of an epoch");
    }
  std::map<std::string, std::string> sched, es;
  for (const auto &[k, v] : *meta) {
    if (k.starts_with("schedule.")) sched[k.substr(9)] = v;
    if (k.starts_with("early_stopping.")) es[k.substr(15)] = v;
  }
  if (Error e = schedule_->restore(sched)) return Error::make(o_.resumePath + ": " + e.message());
  if (early_)
    if (Error e = early_->restore(es)) return Error::make(o_.resumePath + ": " + e.message());
  return Error::success();
}

RunStatus Session::evalOnly() {
  MetricsWriter writer;
  if (leader() && !o_.metricsPath.empty())
    if (Error e = writer.open(o_.metricsPath, false)) return fail(e.message());
  auto t = evaluate({}, data_.test);
  if (!t) return fail(t.error().message());
  EpochRecord r;
  r.epoch = progress_.epoch;
  r.add("test_loss", t->mean(0));
  for (size_t i = 0; i < s_.metrics.size(); ++i)
    r.add("test_" + std::string(s_.metrics[i] == "accuracy" ? "acc" : s_.metrics[i]),
          t->mean(i + 1));
  r.add("images_per_s", t->timing.rate());
  r.add("peak_rss_bytes", static_cast<double>(peakRssBytes()));
  out_ << "test_loss " << t->mean(0);
  for (size_t i = 0; i < s_.metrics.size(); ++i)
    out_ << " test_" << (s_.metrics[i] == "accuracy" ? "acc" : s_.metrics[i]) << " "
         << 100 * t->mean(i + 1) << "%";
  if (t->timing.any()) out_ << " (" << formatRate(t->timing.rate()) << " images/s)";
  out_ << "\n" << std::flush;
  if (std::string why = evalProblem(r); !why.empty()) return fail(why + ".", RunStatus::TrainingFailed);
  if (leader() && !o_.metricsPath.empty())
    if (Error e = writer.write(r)) return fail(e.message());
  return RunStatus::Ok;
}

RunStatus Session::trainSteps(BatchLoader &loader, int64_t stepsPerEpoch, Totals &train,
                              Timing &epochTiming) {
  int64_t epoch = progress_.epoch;
  // The next batch's inputs are copied in while the current one computes.
  Expected<std::unique_ptr<StagedBatch>> next = std::unique_ptr<StagedBatch>();
  if (!stepLimitReached()) next = stage(loader, *train_, true, 0);
  while (next && *next && !InterruptGuard::caught()) {
    std::unique_ptr<StagedBatch> cur = std::move(*next);
    next = std::unique_ptr<StagedBatch>();
    if (o_.maxSteps < 0 || runSteps_ + 1 < o_.maxSteps) next = stage(loader, *train_, true, 1);
    if (!next) return fail(next.error().message());
    lr_ = schedule_->lr(epoch, progress_.stepInEpoch, stepsPerEpoch);
    double t0 = nowSeconds();
    auto v = runStaged(*cur);
    if (!v) return fail(v.error().message());
    double dt = nowSeconds() - t0;
    if (RunStatus st = countStep(cur->batch, *v, dt, stepsPerEpoch, train, epochTiming);
        st != RunStatus::Ok)
      return st;
    if (profile_ && runSteps_ > 5 && &cur->exec->plan() == &profile_->plan())
      profile_->add(cur->exec->times());
  }
  if (!next) return fail(next.error().message());
  return RunStatus::Ok;
}

RunStatus Session::deterministicSteps(BatchLoader &loader, int64_t stepsPerEpoch, Totals &train,
                                      Timing &epochTiming) {
  Batch b;
  while (!stepLimitReached() && !InterruptGuard::caught() && loader.next(b)) {
    lr_ = schedule_->lr(progress_.epoch, progress_.stepInEpoch, stepsPerEpoch);
    double t0 = nowSeconds();
    auto v = det_->run(b, static_cast<float>(lr_), progress_.step + 1);
    if (!v) return fail(v.error().message());
    if (RunStatus st = countStep(b, *v, nowSeconds() - t0, stepsPerEpoch, train, epochTiming);
        st != RunStatus::Ok)
      return st;
  }
  return RunStatus::Ok;
}

// A run diverged when its loss is not finite, or is this many times the first step's
// (at least 1): far past any loss a converging run of any scale goes through.
constexpr double kDivergence = 1e6;

std::string Session::evalProblem(const EpochRecord &r) {
  for (const auto &[key, value] : r.values) {
    if ((key != "test_loss" && key != "val_loss") || std::isfinite(value)) continue;
    std::string set = key == "test_loss" ? "test" : "validation";
    return "the " + set + " loss is " + (std::isnan(value) ? "nan" : "infinite") +
           ": the model's outputs on the " + set + " set are not finite";
  }
  return "";
}

std::string Session::lossProblem(double loss) const {
  if (std::isnan(loss)) return "the loss became nan";
  if (std::isinf(loss)) return "the loss became infinite";
  double bound = kDivergence * std::max(1.0, std::fabs(firstLoss_));
  if (std::fabs(loss) <= bound) return "";
  char text[96];
  std::snprintf(text, sizeof text, "the loss diverged to %.4g, more than %.0e times the first step's %.4g",
                loss, kDivergence, firstLoss_);
  return text;
}

RunStatus Session::countStep(const Batch &b, const std::vector<double> &v, double dt,
                             int64_t stepsPerEpoch, Totals &train, Timing &epochTiming) {
  int64_t epoch = progress_.epoch;
  ++progress_.step;
  ++progress_.stepInEpoch;
  ++runSteps_;
  double loss = v[0];
  if (runSteps_ == 1) firstLoss_ = loss;
  if (std::string why = lossProblem(loss); !why.empty())
    return fail(why + " at epoch " + std::to_string(epoch + 1) + ", step " +
                    std::to_string(progress_.stepInEpoch) + " (global step " +
                    std::to_string(progress_.step) + "); stopping. " +
                    (runSteps_ == 1 ? "It came from the model and data, not the learning rate: "
                                      "no update had been made yet."
                                    : "A lower learning rate may help."),
                RunStatus::TrainingFailed);
  train.add(v, b.samples);
  bool warmUp = runSteps_ <= 5; // the first steps of a run are warm-up
  runTiming_.add(dt, b.globalSize, warmUp);
  epochTiming.add(dt, b.globalSize, warmUp);
  bar_.update(epoch + 1, s_.epochs, progress_.stepInEpoch, stepsPerEpoch, train.mean(0),
              epochTiming.rate());
  return RunStatus::Ok;
}

Expected<EpochRecord> Session::epochRecord(int64_t epoch, const Totals &train,
                                           const Timing &timing, double started,
                                           double &monitored) {
  const auto &metrics = s_.metrics;
  EpochRecord r;
  r.epoch = epoch + 1;
  r.add("steps", static_cast<double>(progress_.step));
  r.add("train_loss", train.mean(0));
  r.add("train_acc", train.mean(1));
  for (size_t i = 1; i < metrics.size(); ++i) r.add("train_" + metrics[i], train.mean(i + 1));
  monitored = std::nan("");
  if (!valIdx_.empty()) {
    auto v = evaluate(valIdx_, data_.train);
    if (!v) return v.takeError();
    r.add("val_loss", v->mean(0));
    r.add("val_acc", v->mean(1));
    monitored = v->mean(0);
  }
  auto t = evaluate({}, data_.test);
  if (!t) return t.takeError();
  r.add("test_loss", t->mean(0));
  r.add("test_acc", t->mean(1));
  for (size_t i = 1; i < metrics.size(); ++i) r.add("test_" + metrics[i], t->mean(i + 1));
  if (std::isnan(monitored)) monitored = t->mean(0);
  r.add("lr", lr_);
  r.add("seconds", nowSeconds() - started);
  r.add("images_per_s", timing.rate());
  r.add("peak_rss_bytes", static_cast<double>(peakRssBytes()));
  return r;
}

Expected<bool> Session::endEpoch(int64_t epoch, double monitored) {
  schedule_->endEpoch(epoch, monitored);
  bool stop = early_ && early_->update(monitored);
  if (stop) out_ << "early stopping: no improvement for " << early_->patience << " epochs\n";
  if (s_.checkpointEvery > 0 && progress_.epoch % s_.checkpointEvery == 0)
    if (Error e = saveState(periodicPath(progress_.epoch))) return e;
  return stop;
}

RunStatus Session::run() {
  if (Error e = setUp()) return fail(e.message());
  if (o_.evalOnly) return evalOnly();
  if (!o_.predictPath.empty()) return predict();
  InterruptGuard interrupts;
  MetricsWriter writer;
  if (leader() && !o_.metricsPath.empty())
    if (Error e = writer.open(o_.metricsPath, !o_.resumePath.empty())) return fail(e.message());

  BatchLoader loader(data_.train, trainIdx_, loaderOptions(true));
  int64_t stepsPerEpoch = loader.batchesPerEpoch();
  out_ << "training " << fwd_->name() << " on " << data_.description;
  if (ranks() > 1) out_ << " with " << ranks() << " ranks";
  if (!valIdx_.empty())
    out_ << " (" << valIdx_.size() << " training images held out for validation)";
  int threads = threadCount();
  out_ << "; batch " << s_.batch << (ranks() > 1 ? " in all" : "");
  if (det_) out_ << " (deterministic: micro-batches of " << o_.microBatch << ")";
  out_ << ", " << s_.optimizer.name << " lr " << s_.lr << ", backend "
       << backend_.name() << ", " << threads << (threads == 1 ? " thread" : " threads")
       << (ranks() > 1 ? " a rank" : "");
  // The default avoided CPUs that other processes kept busy: say so.
  if (const ThreadChoice *c = defaultThreadChoiceIfMade(); c && c->busy > 0 && c->threads == threads)
    out_ << " (" << c->busy << " of " << c->cpus << " CPUs busy with other work; --threads to choose)";
  out_ << "\n";

  double lastTestAcc = std::nan("");
  // A checkpoint written when early stopping fired ends a run as its last epoch does.
  bool stop = early_ && early_->stopped();
  if (stop)
    out_ << "early stopping had ended the run that wrote " << o_.resumePath << " (after epoch "
         << progress_.epoch << "); nothing to train\n";
  while (!stop && progress_.epoch < s_.epochs) {
    int64_t epoch = progress_.epoch;
    double started = nowSeconds();
    loader.startEpoch(epoch);
    loader.skip(progress_.stepInEpoch);
    lr_ = schedule_->lr(epoch, progress_.stepInEpoch, stepsPerEpoch);
    Totals train;
    Timing timing;
    RunStatus st = det_ ? deterministicSteps(loader, stepsPerEpoch, train, timing)
                        : trainSteps(loader, stepsPerEpoch, train, timing);
    if (st != RunStatus::Ok) return st;
    if (int sig = InterruptGuard::caught()) return interrupted(sig);
    if (Error e = train.reduce(comm_, train_->outputs().size())) return fail(e.message());
    if (Error e = timing.slowestOf(comm_)) return fail(e.message());
    stop = stepLimitReached();
    bool epochDone = !stop || progress_.stepInEpoch == stepsPerEpoch;
    if (epochDone) {
      progress_.epoch += 1;
      progress_.stepInEpoch = 0;
    }
    bar_.clear();
    double monitored = 0;
    auto r = epochRecord(epoch, train, timing, started, monitored);
    if (!r) return fail(r.error().message());
    lastTestAcc = r->get("test_acc");
    out_ << epochLine(*r, s_.epochs) << "\n" << std::flush;
    if (std::string why = evalProblem(*r); !why.empty())
      return fail(why + " after epoch " + std::to_string(epoch + 1) + "; stopping.",
                  RunStatus::TrainingFailed);
    if (leader() && !o_.metricsPath.empty())
      if (Error e = writer.write(*r)) return fail(e.message());
    if (epochDone) {
      auto early = endEpoch(epoch, monitored);
      if (!early) return fail(early.error().message());
      stop = stop || *early;
    }
  }
  if (!o_.savePath.empty())
    if (Error e = saveState(o_.savePath)) return fail(e.message());
  return finish(lastTestAcc);
}

RunStatus Session::predict() {
  auto in = loadCheckpoint(o_.predictPath);
  if (!in) return fail(in.error().message());
  const ir::Value *x = fwd_->inputs()[0];
  const ir::TensorType &want = x->type();
  auto it = in->tensors.find(x->name());
  if (it == in->tensors.end())
    return fail(o_.predictPath + ": has no tensor '" + x->name() + "' for input %" + x->name() +
                " of model '" + fwd_->name() + "' (" + want.str() + ")");
  const Tensor &t = it->second;
  const ir::TensorType &have = t.type();
  bool fits = have.dtype == want.dtype && have.rank() == want.rank() && have.rank() > 0 &&
              have.dims[0] >= 1 &&
              std::equal(have.dims.begin() + 1, have.dims.end(), want.dims.begin() + 1);
  if (!fits)
    return fail(o_.predictPath + ": '" + x->name() + "' is " + have.str() + ", but model '" +
                fwd_->name() + "' takes " + want.str());
  int64_t batch = have.dims[0];
  auto exec = runner_->executor(*fwd_, batch);
  if (!exec) return fail(exec.error().message());
  (*exec)->setInput(0, t.raw(), t.bytes());
  if (Error e = (*exec)->run()) return fail(e.message());
  Checkpoint out;
  size_t outputs = (*exec)->plan().outputs.size();
  for (size_t i = 0; i < outputs; ++i)
    out.tensors.emplace(outputs == 1 ? "output" : "output." + std::to_string(i), (*exec)->output(i));
  out.metadata = {{"model", fwd_->name()}, {"input", o_.predictPath}};
  if (Error e = saveCheckpoint(o_.predictionsPath, out)) return fail(e.message());
  out_ << "predicted " << batch << (batch == 1 ? " sample" : " samples") << " of '" << x->name()
       << "' in " << o_.predictPath << "; wrote " << (outputs == 1 ? "'output'" : "'output.0' ...")
       << " to " << o_.predictionsPath << "\n";
  return RunStatus::Ok;
}

RunStatus Session::interrupted(int sig) {
  bar_.clear();
  std::string where = (progress_.stepInEpoch == 0
                           ? "after epoch " + std::to_string(progress_.epoch)
                           : "at epoch " + std::to_string(progress_.epoch + 1) + ", step " +
                                 std::to_string(progress_.stepInEpoch)) +
                      " (global step " + std::to_string(progress_.step) + ")";
  std::string what = "no --save was given, so no checkpoint is written";
  if (!o_.savePath.empty()) {
    if (Error e = saveState(o_.savePath)) return fail(e.message());
    what = "wrote the checkpoint " + o_.savePath + "; --resume " + o_.savePath + " continues it";
  }
  return fail(std::string("interrupted by ") + signalName(sig) + " " + where + "; " + what,
              static_cast<RunStatus>(128 + sig));
}

RunStatus Session::finish(double lastTestAcc) {
  if (std::isnan(lastTestAcc)) {
    auto t = evaluate({}, data_.test);
    if (!t) return fail(t.error().message());
    lastTestAcc = t->mean(1);
  }
  if (Error e = runTiming_.slowestOf(comm_)) return fail(e.message());
  out_ << "test accuracy: " << std::fixed;
  out_.precision(2);
  out_ << 100 * lastTestAcc << "%";
  out_ << std::defaultfloat;
  if (runTiming_.any()) out_ << " (" << formatRate(runTiming_.rate()) << " images/s in training)";
  out_ << "\n";
  if (profile_) {
    if (profile_->runs() == 0)
      out_ << "profile: no step ran after the first 5 (warm-up) at batch " << profile_->plan().batch << "\n";
    else
      out_ << profile_->table();
    if (leader() && o_.onProfile && profile_->runs() > 0)
      if (Error e = o_.onProfile(*profile_)) return fail(e.message());
  }
  return RunStatus::Ok;
}

} // namespace

RunStatus train(const ir::Module &m, const ir::RunSettings &settings, const RunOptions &opts,
                const BackendSet &backends, std::ostream &out, std::ostream &err) {
  Session s(m, settings, opts, backends, out, err);
  return s.run();
}

} // namespace dtnn::runtime
