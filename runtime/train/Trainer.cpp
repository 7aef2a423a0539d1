// The training loop of a session (Session.h): epochs of train steps, pipelined
// (the next batch is staged while a step computes) or deterministic, the loss
// checks, each epoch's record, schedule, early stopping and final accuracy.
#include "runtime/train/Session.h"

#include "ir/Log.h"
#include "passes/Losses.h"
#include "runtime/train/Interrupt.h"
#include "runtime/Threads.h"

#include <algorithm>
#include <cstdio>

namespace dtnn::runtime {
namespace session {

RunStatus Session::trainSteps(BatchLoader &loader, int64_t stepsPerEpoch, Totals &train,
                              Timing &epochTiming) {
  int64_t epoch = progress_.epoch;
  // The next batch's inputs are copied in while the current one computes.
  Expected<std::unique_ptr<StagedBatch>> next = std::unique_ptr<StagedBatch>();
  if (!stepLimitReached()) next = stage(loader, *train_, true, 0);
  while (next && *next) {
    auto stop = stopBeforeStep();
    if (!stop) return fail(stop.error().message());
    if (*stop) break;
    std::unique_ptr<StagedBatch> cur = std::move(*next);
    next = std::unique_ptr<StagedBatch>();
    double staging = monotonicSeconds();
    if (o_.maxSteps < 0 || runSteps_ + 1 < o_.maxSteps) next = stage(loader, *train_, true, 1);
    if (!next) return fail(next.error().message());
    if (trace_ && *next && (*next)->dataWait > 0)
      trace_->addSpan(RunTrace::kData, "waiting for the batch of step " + std::to_string(runSteps_ + 2),
                      "data", staging, monotonicSeconds());
    lr_ = schedule_->lr(epoch, progress_.stepInEpoch, stepsPerEpoch);
    bool traced = trace_ && trace_->wantsKernels();
    if (traced) cur->exec->setProfiling(true);
    double t0 = nowSeconds();
    auto v = runStaged(*cur);
    if (!v) return fail(v.error().message());
    // A step's time includes what it waited for its data.
    double dt = nowSeconds() - t0 + cur->dataWait;
    if (RunStatus st =
            countStep(cur->batch, *v, dt, stepsPerEpoch, train, epochTiming, cur->dataWait);
        st != RunStatus::Ok)
      return st;
    if (profile_ && runSteps_ > 5 && &cur->exec->plan() == &profile_->plan()) {
      profile_->add(cur->exec->times());
      profile_->addStepSeconds(dt);
    }
    if (traced) {
      trace_->addStep(cur->exec->plan(), cur->exec->times(), runSteps_);
      if (!trace_->wantsKernels() && !(profile_ && &cur->exec->plan() == &profile_->plan()))
        cur->exec->setProfiling(false);
    }
  }
  if (!next) return fail(next.error().message());
  return settleStop();
}

RunStatus Session::deterministicSteps(BatchLoader &loader, int64_t stepsPerEpoch, Totals &train,
                                      Timing &epochTiming) {
  Batch b;
  while (!stepLimitReached()) {
    auto stop = stopBeforeStep();
    if (!stop) return fail(stop.error().message());
    if (*stop) break;
    if (!loader.next(b)) {
      if (Error e = loader.takeError()) return fail(e.message());
      break;
    }
    double wait = loader.takeWaitSeconds();
    lr_ = schedule_->lr(progress_.epoch, progress_.stepInEpoch, stepsPerEpoch);
    double t0 = nowSeconds();
    auto v = det_->run(b, static_cast<float>(lr_), progress_.step + 1);
    if (!v) return fail(v.error().message());
    if (RunStatus st = countStep(b, *v, nowSeconds() - t0 + wait, stepsPerEpoch, train,
                                 epochTiming, wait);
        st != RunStatus::Ok)
      return st;
  }
  return settleStop();
}

Expected<bool> Session::stopBeforeStep() {
  if (stop_.signal) return true;
  auto s = vote_->beforeStep();
  if (!s) return s.takeError();
  stop_ = *s;
  return stop_.signal != 0;
}

RunStatus Session::settleStop() {
  if (stop_.signal) return RunStatus::Ok;
  auto s = vote_->settle();
  if (!s) return fail(s.error().message());
  stop_ = *s;
  return RunStatus::Ok;
}

// A run diverged when its loss is not finite, or is this many times the first step's
// (at least 1): far past any loss a converging run of any scale goes through.
constexpr double kDivergence = 1e6;

Error Session::evalProblem(const EpochRecord &r) {
  for (const auto &[key, value] : r.values) {
    if ((key != "test_loss" && key != "val_loss") || std::isfinite(value)) continue;
    std::string set = key == "test_loss" ? "test" : "validation";
    return Error::make("the " + set + " loss is " + (std::isnan(value) ? "nan" : "infinite") +
                       ": the model's outputs on the " + set + " set are not finite");
  }
  return Error::success();
}

Error Session::lossProblem(double loss) const {
  if (std::isnan(loss)) return Error::make("the loss became nan");
  if (std::isinf(loss)) return Error::make("the loss became infinite");
  double bound = kDivergence * std::max(1.0, std::fabs(firstLoss_));
  if (std::fabs(loss) <= bound) return Error::success();
  char text[96];
  std::snprintf(text, sizeof text, "the loss diverged to %.4g, more than %.0e times the first step's %.4g",
                loss, kDivergence, firstLoss_);
  return Error::make(text);
}

RunStatus Session::countStep(const Batch &b, const std::vector<double> &v, double dt,
                             int64_t stepsPerEpoch, Totals &train, Timing &epochTiming,
                             double dataWait) {
  int64_t epoch = progress_.epoch;
  ++progress_.step;
  ++progress_.stepInEpoch;
  ++runSteps_;
  double loss = v[0];
  if (runSteps_ == 1) firstLoss_ = loss;
  if (o_.onStep) o_.onStep(progress_.step, epoch + 1, loss, lr_);
  if (Error why = lossProblem(loss))
    return fail(why.message() + " at epoch " + std::to_string(epoch + 1) + ", step " +
                    std::to_string(progress_.stepInEpoch) + " (global step " +
                    std::to_string(progress_.step) + "); stopping. " +
                    (runSteps_ > 1              ? "A lower learning rate may help."
                     : o_.resumePath.empty() ? "It came from the model and data, not the learning "
                                               "rate: no update had been made yet."
                                             : "It came from the resumed weights and the data: this "
                                               "run had made no update yet."),
                RunStatus::TrainingFailed);
  train.add(v, b.counted);
  bool warmUp = runSteps_ <= 5; // the first steps of a run are warm-up
  runTiming_.add(dt, b.globalSize, warmUp, dataWait);
  epochTiming.add(dt, b.globalSize, warmUp, dataWait);
  bar_.update(epoch + 1, s_.epochs, progress_.stepInEpoch, stepsPerEpoch, train.mean(0),
              epochTiming.rate(), epochTiming.dataWaitShare());
  return RunStatus::Ok;
}

Expected<EpochRecord> Session::epochRecord(int64_t epoch, const Totals &train,
                                           const Timing &timing, double started,
                                           double &monitored) {
  const auto &metrics = s_.metrics;
  EpochRecord r;
  r.epoch = epoch + 1;
  r.add("steps", static_cast<double>(progress_.step));
  // Each set's loss and metrics: "train_loss", "train_acc", "train_top5"; "val_", "test_".
  auto addSet = [&](const std::string &set, const Totals &t, const Dataset &d) {
    r.add(set + "_loss", t.mean(0));
    for (size_t i = 0; i < metrics.size(); ++i)
      r.add(set + "_" + passes::metricLabel(metrics[i]), metricValue(t, i + 1, d));
  };
  addSet("train", train, data_.train);
  monitored = std::nan("");
  if (!valIdx_.empty()) {
    auto v = evaluate(valIdx_, data_.train);
    if (!v) return v.takeError();
    addSet("val", *v, data_.train);
    monitored = v->mean(0);
  }
  auto t = evaluate({}, data_.test);
  if (!t) return t.takeError();
  addSet("test", *t, data_.test);
  if (std::isnan(monitored)) monitored = t->mean(0);
  r.add("lr", lr_);
  r.add("seconds", nowSeconds() - started);
  r.add("images_per_s", timing.rate());
  // Image files: the share of the step time spent waiting for them.
  if (data_.train.files) r.add("data_wait", timing.dataWaitShare());
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
  if (o_.generate > 0) return generate();
  if (!o_.predictPath.empty()) return predict();
  if (!o_.tracePath.empty()) {
    auto trace = RunTrace::start(comm_, o_.traceSteps);
    if (!trace) return fail(trace.error().message());
    trace_ = std::move(*trace);
  }
  RunStatus st = trainEpochs();
  // Every rank ends a run that finished or that a signal stopped at the same step, so the
  // trace's gathering meets them all.
  if (trace_ && (st == RunStatus::Ok || stop_.signal))
    if (Error e = trace_->finish(comm_, o_.tracePath)) return fail(e.message());
  return st;
}

RunStatus Session::trainEpochs() {
  StopBetweenSteps interrupts;
  StopContext stopping("; no checkpoint was written");
  MetricsWriter writer;
  if (leader() && !o_.metricsPath.empty())
    if (Error e = writer.open(o_.metricsPath, !o_.resumePath.empty())) return fail(e.message());

  BatchLoader loader(data_.train, trainIdx_, loaderOptions(true));
  int64_t stepsPerEpoch = loader.batchesPerEpoch();
  if (progress_.stepInEpoch > stepsPerEpoch)
    return fail(o_.resumePath + ": the checkpoint stopped after step " +
                std::to_string(progress_.stepInEpoch) + " of epoch " +
                std::to_string(progress_.epoch + 1) + ", but an epoch of this run has " +
                std::to_string(stepsPerEpoch) + " steps; it was not written by this run's "
                "settings and data (or its metadata was changed)");
  out_ << "training " << fwd_->name() << " on " << data_.description;
  if (ranks() > 1) out_ << " with " << ranks() << " ranks";
  if (comm_.nodeCount() > 1) out_ << " on " << comm_.nodeCount() << " nodes";
  if (!valIdx_.empty())
    out_ << " (" << valIdx_.size() << " training " << data_.train.noun
         << " held out for validation)";
  int threads = threadCount();
  out_ << "; batch " << s_.batch << (ranks() > 1 ? " in all" : "");
  if (det_) out_ << " (deterministic: micro-batches of " << o_.microBatch << ")";
  out_ << ", " << s_.optimizer.name << " lr " << s_.lr << ", backend "
       << backend_.name() << ", " << threads << (threads == 1 ? " thread" : " threads")
       << (ranks() > 1 ? " a rank" : "");
  // The default avoided CPUs that other processes kept busy: say so.
  if (const ThreadChoice *c = defaultThreadChoiceIfMade(); c && c->busy > 0 && c->threads == threads)
    out_ << " (" << c->busy << " of " << c->cpus << " CPUs busy with other work; --threads to choose)";
  if (std::string why = passiveWaitReason(); !why.empty())
    out_ << " (" << why << ": threads wait passively; fewer threads would run faster)";
  out_ << "\n";

  DTNN_LOG_AT(Info, "run",
              "@" + train_->name() + ": ranks " + std::to_string(ranks()) + ", threads " +
                  std::to_string(threads) + ", backend " + std::string(backend_.name()) +
                  ", steps an epoch " + std::to_string(stepsPerEpoch) + ", data workers " +
                  std::to_string(dataWorkers_));
  double lastTestAcc = std::nan("");
  // Unreadable training images: the most one epoch met, and the count before this epoch.
  int64_t reportedBad = 0, badBefore = 0;
  // A checkpoint written when early stopping fired ends a run as its last epoch does.
  bool stop = early_ && early_->stopped();
  if (stop)
    out_ << "early stopping had ended the run that wrote " << o_.resumePath << " (after epoch "
         << progress_.epoch << "); nothing to train\n";
  else if (progress_.epoch >= s_.epochs)
    out_ << "nothing to train: " << o_.resumePath << " has trained " << progress_.epoch
         << (progress_.epoch == 1 ? " epoch" : " epochs") << ", and this run's epochs setting is "
         << s_.epochs << " (--epochs to train more); evaluating it\n";
  else if (o_.maxSteps == 0)
    out_ << "nothing to train: --steps 0; evaluating\n";
  while (!stop && progress_.epoch < s_.epochs) {
    int64_t epoch = progress_.epoch;
    double started = nowSeconds(), epochStarted = monotonicSeconds();
    loader.startEpoch(epoch);
    loader.skip(progress_.stepInEpoch);
    lr_ = schedule_->lr(epoch, progress_.stepInEpoch, stepsPerEpoch);
    Totals train;
    Timing timing;
    RunStatus st = det_ ? deterministicSteps(loader, stepsPerEpoch, train, timing)
                        : trainSteps(loader, stepsPerEpoch, train, timing);
    if (st != RunStatus::Ok) return st;
    if (trace_)
      trace_->addSpan(RunTrace::kRun, "epoch " + std::to_string(epoch + 1) + " (training)",
                      "epoch", epochStarted, monotonicSeconds());
    if (stop_.signal) return interrupted(stop_);
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
    if (o_.onEpoch) o_.onEpoch(*r);
    // The same unreadable files come back every epoch: warn when an epoch meets more of them.
    int64_t met = loader.badImages().count() - badBefore;
    if (met > reportedBad) {
      int64_t already = loader.badImages().count() - met + reportedBad;
      warnBadImages(loader.badImages(), already, "training");
      reportedBad = met;
    }
    badBefore = loader.badImages().count();
    if (Error why = evalProblem(*r))
      return fail(why.message() + " after epoch " + std::to_string(epoch + 1) + "; stopping.",
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
  if (o_.onFinish) o_.onFinish(runner_->params());
  if (int sig = StopBetweenSteps::caught())
    err_ << "dtnn-run: " << (ranks() > 1 ? "rank " + std::to_string(rank()) + ": " : "")
         << "note: " << signalName(sig) << " arrived after the last step; the run finished\n";
  return finish(lastTestAcc);
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
  if (runTiming_.any())
    out_ << " (" << formatRate(runTiming_.rate()) << " " << data_.train.noun << "/s in training)";
  out_ << "\n";
  if (profile_) {
    if (profile_->runs() == 0)
      out_ << "profile: no step ran after the first 5 (warm-up) at batch " << profile_->plan().batch << "\n";
    else
      out_ << profile_->table();
    // What the steps after warm-up waited for their data, against their whole time.
    if (int64_t steps = runSteps_ - 5; steps > 0 && runTiming_.seconds[1] > 0) {
      char line[160];
      std::snprintf(line, sizeof line,
                    "data: the steps waited %.2f ms each for their batch, %.1f%% of a step's time "
                    "(%d data %s)\n",
                    1e3 * runTiming_.dataWait / double(steps), 100 * runTiming_.dataWaitShare(),
                    dataWorkers_, dataWorkers_ == 1 ? "worker" : "workers");
      out_ << line;
    }
    for (const auto &b : backends_.all())
      if (std::string s = b->summary(); !s.empty()) out_ << s << "\n";
    if (leader() && o_.onProfile && profile_->runs() > 0)
      if (Error e = o_.onProfile(*profile_)) return fail(e.message());
  }
  return RunStatus::Ok;
}

} // namespace session

RunStatus train(const ir::Module &m, const ir::RunSettings &settings, const RunOptions &opts,
                const BackendSet &backends, std::ostream &out, std::ostream &err) {
  session::Session s(m, settings, opts, backends, out, err);
  return s.run();
}

} // namespace dtnn::runtime
