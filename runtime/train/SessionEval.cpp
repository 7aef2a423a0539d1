// Evaluation and prediction: staging batches into executors, evaluating a
// set, --eval-only and --predict.
#include "runtime/train/Session.h"
#include "passes/Losses.h"

#include "runtime/train/Checkpoint.h"
#include "runtime/train/Interrupt.h"

namespace dtnn::runtime::session {

Expected<std::unique_ptr<StagedBatch>> Session::stage(BatchLoader &loader, const ir::Graph &g,
                                                      bool training, int64_t ahead) {
  auto b = std::make_unique<StagedBatch>();
  if (!loader.next(b->batch)) {
    if (Error e = loader.takeError()) return e;
    return std::unique_ptr<StagedBatch>();
  }
  b->dataWait = loader.takeWaitSeconds();
  auto exec = runner_->executor(g, b->batch.size);
  if (!exec) return exec.takeError();
  b->exec = *exec;
  std::vector<const void *> data = {b->batch.input(), b->batch.labels.data()};
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

void Session::warnBadImages(const BadImageLog &log, int64_t &reported, const char *set) {
  int64_t n = log.count();
  if (n <= reported) return;
  bar_.clear();
  err_ << ("dtnn-run: " + (ranks() > 1 ? "rank " + std::to_string(rank()) + ": " : "") +
           "warning: " + std::to_string(n - reported) + " " + set + " image" +
           (n - reported == 1 ? "" : "s") + " could not be read and " +
           (n - reported == 1 ? "was" : "were") + " replaced by the next readable one (the first: " +
           log.first() + ")\n")
       << std::flush;
  reported = n;
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
  double started = monotonicSeconds();
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
    t.add(*v, cur->batch.counted);
  }
  if (!next) return next.takeError();
  // Each evaluation meets the same unreadable files: warn when one meets more than before.
  int64_t &most = evalBadImages_[&d == &data_.test ? 0 : 1];
  if (loader.badImages().count() > most) {
    int64_t reported = most;
    warnBadImages(loader.badImages(), reported, &d == &data_.test ? "test" : "validation");
    most = reported;
  }
  if (Error e = t.reduce(comm_, eval_->outputs().size())) return e;
  if (Error e = t.timing.slowestOf(comm_)) return e;
  if (trace_)
    trace_->addSpan(RunTrace::kRun, &d == &data_.test ? "evaluation (test set)"
                                                      : "evaluation (validation set)",
                    "evaluation", started, monotonicSeconds());
  return t;
}

RunStatus Session::evalOnly() {
  StopContext stopping("during evaluation (--eval-only), which trains nothing, so nothing is saved");
  MetricsWriter writer;
  if (leader() && !o_.metricsPath.empty())
    if (Error e = writer.open(o_.metricsPath, false)) return fail(e.message());
  auto t = evaluate({}, data_.test);
  if (!t) return fail(t.error().message());
  EpochRecord r;
  r.epoch = progress_.epoch;
  r.add("test_loss", t->mean(0));
  for (size_t i = 0; i < s_.metrics.size(); ++i)
    r.add("test_" + passes::metricLabel(s_.metrics[i]), metricValue(*t, i + 1, data_.test));
  r.add("images_per_s", t->timing.rate());
  r.add("peak_rss_bytes", static_cast<double>(peakRssBytes()));
  out_ << "test_loss " << t->mean(0);
  for (const auto &[k, v] : r.values)
    if (k.starts_with("test_") && k != "test_loss") out_ << " " << k << " " << recordValue(k, v);
  if (t->timing.any())
    out_ << " (" << formatRate(t->timing.rate()) << " " << data_.test.noun << "/s)";
  out_ << "\n" << std::flush;
  if (Error why = evalProblem(r)) return fail(why.message() + ".", RunStatus::TrainingFailed);
  if (leader() && !o_.metricsPath.empty())
    if (Error e = writer.write(r)) return fail(e.message());
  if (o_.onEpoch) o_.onEpoch(r);
  return RunStatus::Ok;
}

RunStatus Session::predict() {
  StopContext stopping("while computing the outputs of --predict; nothing was written to " +
                       o_.predictionsPath);
  if (namesImages(o_.predictPath)) return predictImages();
  auto in = loadCheckpoint(o_.predictPath);
  if (!in) return fail(in.error().message());
  // Every input of the model, by name; the batch is the first dimension of the symbolic ones.
  const auto &xs = fwd_->inputs();
  int64_t batch = 1;
  bool batchSet = false;
  for (const ir::Value *x : xs) {
    const ir::TensorType &want = x->type();
    auto it = in->tensors.find(x->name());
    if (it == in->tensors.end())
      return fail(o_.predictPath + ": has no tensor '" + x->name() + "' for input %" + x->name() +
                  " of model '" + fwd_->name() + "' (" + want.str() + ")");
    const ir::TensorType &have = it->second.type();
    bool symbolic = want.rank() > 0 && ir::isBatchDim(want.dims[0]);
    bool fits = have.dtype == want.dtype && have.rank() == want.rank() &&
                (symbolic ? have.dims[0] >= 1 && (!batchSet || have.dims[0] == batch)
                          : want.rank() == 0 || have.dims[0] == want.dims[0]) &&
                (want.rank() == 0 ||
                 std::equal(have.dims.begin() + 1, have.dims.end(), want.dims.begin() + 1));
    if (!fits)
      return fail(o_.predictPath + ": '" + x->name() + "' is " + have.str() + ", but model '" +
                  fwd_->name() + "' takes " + want.str() +
                  (symbolic && batchSet ? " with the batch of the inputs before it" : ""));
    if (symbolic && !batchSet) batch = have.dims[0], batchSet = true;
  }
  const ir::Value *x = xs[0];
  auto exec = runner_->executor(*fwd_, batch);
  if (!exec) return fail(exec.error().message());
  for (size_t i = 0; i < xs.size(); ++i) {
    const Tensor &t = in->tensors.at(xs[i]->name());
    (*exec)->setInput(i, t.raw(), t.bytes());
  }
  if (Error e = (*exec)->run()) return fail(e.message());
  Checkpoint out;
  size_t outputs = (*exec)->plan().outputs.size();
  for (size_t i = 0; i < outputs; ++i)
    out.tensors.emplace(outputs == 1 ? "output" : "output." + std::to_string(i), (*exec)->output(i));
  out.metadata = {{"model", fwd_->name()}, {"input", o_.predictPath}};
  // Outputs that are not finite are a failed prediction, not a result to keep.
  if (Error why = nonFiniteTensor(out))
    return fail("the model's outputs on '" + x->name() + "' of " + o_.predictPath + " are not " +
                    "finite: " + why.message() + "; nothing was written to " + o_.predictionsPath,
                RunStatus::TrainingFailed);
  if (Error e = saveCheckpoint(o_.predictionsPath, out)) return fail(e.message());
  out_ << "predicted " << batch << (batch == 1 ? " sample" : " samples") << " of '" << x->name()
       << "' in " << o_.predictPath << "; wrote " << (outputs == 1 ? "'output'" : "'output.0' ...")
       << " to " << o_.predictionsPath << "\n";
  return RunStatus::Ok;
}

} // namespace dtnn::runtime::session
