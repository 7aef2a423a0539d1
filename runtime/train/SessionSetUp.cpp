// Preparing a run: the graphs, the data, the parameters (initialized, resumed or
// taken from --init-from, the same on every rank) and the deterministic stepper.
#include "runtime/train/Session.h"
#include "runtime/train/data/Augmentations.h"

#include <sched.h>

#include "ir/Printer.h"
#include "passes/Losses.h"
#include "ir/RunSettings.h"
#include "runtime/HostMemory.h"
#include "runtime/ResourceLimits.h"
#include "runtime/Threads.h"

#include <algorithm>
#include <set>
#include <sstream>

namespace dtnn::runtime::session {

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
  // --predict and --generate run the forward graph alone.
  if (!fwd_ || (!predicting() && (!train_ || !eval_)))
    return Error::make("the module lacks a forward, train or eval graph (run the autodiff pass)");
  // --predict of a tensor file feeds every input by name; training and the rest feed one.
  bool predictTensors = !o_.predictPath.empty() && o_.generate == 0;
  if (fwd_->inputs().empty() || (fwd_->inputs().size() != 1 && !predictTensors))
    return Error::make("model '" + fwd_->name() + "' takes " +
                       std::to_string(fwd_->inputs().size()) +
                       " inputs; dtnn-run trains models with one input (images or tokens)");
  const ir::TensorType &in = fwd_->inputs()[0]->type();
  if (in.dtype != ir::DType::F32 && in.dtype != ir::DType::U8 && in.dtype != ir::DType::I32)
    return Error::make("model input must be f32 or u8 (images) or i32 (tokens), got " + in.str());
  return Error::success();
}

Error Session::checkData(const Dataset &d, const std::string &which) {
  // An empty set would train no step, or average over no sample, and report nan.
  if (d.count == 0) return Error::make(data_.description + ": the " + which + " set is empty");
  const ir::TensorType &in = fwd_->inputs()[0]->type();
  std::string what = d.tokenSamples ? "token sequences" : "images";
  if ((in.dtype == ir::DType::I32) != d.tokenSamples)
    return Error::make(dataName_ + " gives " + what + ", but model '" + fwd_->name() +
                       "' takes " + in.str() +
                       (d.tokenSamples ? " (token sequences are i32[N, T])"
                                       : " (images are f32[N, C, H, W], or u8 for a model "
                                         "that normalizes them; tokens need a text source "
                                         "such as text())"));
  std::vector<int64_t> want(in.dims.begin() + 1, in.dims.end());
  if (d.sampleShape != want) {
    std::string got;
    for (int64_t x : d.sampleShape) {
      if (!got.empty()) got += 'x';
      got += std::to_string(x);
    }
    return Error::make(dataName_ + ": " + which + " " + what + " are " + got +
                       ", but model '" + fwd_->name() + "' takes " + in.str());
  }
  return checkLabels(d, which);
}

Error Session::checkLabels(const Dataset &d, const std::string &which) {
  const ir::TensorType &outT = fwd_->outputs()[0]->type();
  int64_t classes = outT.rank() >= 2 ? outT.dims.back() : 0;
  // A prediction [N, T, ..., C] takes a label per position.
  int64_t positions = 1;
  for (size_t i = 1; i + 1 < outT.dims.size(); ++i) positions *= outT.dims[i];
  if (d.labelsPerSample != positions)
    return Error::make(dataName_ + " gives " + std::to_string(d.labelsPerSample) +
                       (d.labelsPerSample == 1 ? " label" : " labels") + " a sample, but model '" +
                       fwd_->name() + "' predicts " + outT.str() + ", " +
                       std::to_string(positions) + (positions == 1 ? " label" : " labels") +
                       " a sample");
  for (size_t i = 0; i < d.labels.size(); ++i)
    if ((d.labels[i] < 0 || d.labels[i] >= classes) && d.labels[i] != d.ignoreIndex)
      return Error::make(dataName_ + ": " + which + " label " + std::to_string(d.labels[i]) +
                         " of sample " + std::to_string(int64_t(i) / d.labelsPerSample) +
                         " is out of range for model '" + fwd_->name() + "' with " +
                         std::to_string(classes) + " outputs");
  if (d.tokenSamples) {
    int32_t top = d.tokens.empty() ? 0 : *std::max_element(d.tokens.begin(), d.tokens.end());
    if (top >= classes)
      return Error::make(dataName_ + ": " + which + " token " + std::to_string(top) +
                         " is out of range for model '" + fwd_->name() + "' with " +
                         std::to_string(classes) + " outputs (a vocabulary of " +
                         std::to_string(d.numClasses) + ")");
  }
  return Error::success();
}

double Session::metricValue(const Totals &t, size_t i, const Dataset &d) const {
  if (i == 0) return t.mean(0);
  return passes::reportMetric(s_.metrics[i - 1], t.mean(i), {d.bytesPerLabel});
}

Error Session::loadData() {
  if (o_.memoryData) {
    dataName_ = "memory";
    data_ = *o_.memoryData;
    return prepareData();
  }
  DataSpec spec = s_.data;
  const ir::TensorType &input = fwd_->inputs()[0]->type();
  if (o_.synthetic && input.dtype == ir::DType::I32)
    return Error::make("--synthetic makes images, but model '" + fwd_->name() + "' takes tokens " +
                       input.str() + "; train it on a text source (data = text(...))");
  // A text source cuts sequences of the model's length unless told otherwise.
  if (!o_.synthetic && !spec.args.find("seq_len") && dataSourceTakes(spec.name, "seq_len")) {
    if (input.dtype != ir::DType::I32 || input.rank() != 2)
      return Error::make(spec.name + " gives token sequences, but model '" + fwd_->name() +
                         "' takes " + input.str() + " (token sequences are i32[N, T])");
    spec.args.set("seq_len", input.dims[1]);
  }
  if (o_.synthetic) {
    const ir::TensorType &in = input;
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
  return prepareData();
}

Error Session::prepareData() {
  // Padding takes the label the loss leaves out.
  int32_t ignore = static_cast<int32_t>(passes::lossIgnoreIndex(s_.loss));
  for (Dataset *set : {&data_.train, &data_.test}) {
    if (set->ignoreIndex == ignore) continue;
    std::replace(set->labels.begin(), set->labels.end(), set->ignoreIndex, ignore);
    set->ignoreIndex = ignore;
  }
  if (Error e = setUpTransforms()) return e;
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

Error Session::setUpTransforms() {
  const ir::TensorType &in = fwd_->inputs()[0]->type();
  bool files = data_.train.files != nullptr;
  const std::vector<int64_t> &shape = data_.train.sampleShape;
  if (files) {
    // Image files become the model's input size: f32 or u8 [N, 3, H, W].
    if (in.rank() != 4 || in.dims[1] != 3 || in.dtype == ir::DType::I32)
      return Error::make(dataName_ + " gives RGB images of any size, but model '" + fwd_->name() +
                         "' takes " + in.str() + " (RGB images are f32[N, 3, H, W], or u8 for "
                         "a model that normalizes them)");
    for (Dataset *d : {&data_.train, &data_.test}) d->sampleShape = {3, in.dims[2], in.dims[3]};
    evalTransform_ = centreCropTransform(in.dims[2], in.dims[3], data_.images.resize,
                                         data_.images.dctScaling);
    if (evalTransform_.resize < std::max(in.dims[2], in.dims[3]))
      return Error::make(dataName_ + ": 'resize' " + std::to_string(evalTransform_.resize) +
                         " is smaller than the model's input " + std::to_string(in.dims[2]) +
                         "x" + std::to_string(in.dims[3]) + ", which is cropped from it");
  } else if (shape.size() == 3) {
    evalTransform_.height = shape[1];
    evalTransform_.width = shape[2];
  }
  // Synthetic data (--synthetic, or the synthetic source) stands in for the data set as it is:
  // no augmentation.
  bool synthetic = o_.synthetic || dataName_ == "synthetic";
  ir::SettingCall augment = synthetic ? ir::SettingCall{"none", {}} : s_.augment;
  auto train = makeTrainTransform(augment, evalTransform_, files);
  if (!train) return Error::make("augment: " + train.error().message());
  trainTransform_ = *train;
  if (trainTransform_.random() && !files && shape.size() != 3)
    return Error::make("augment: " + s_.augment.name + " transforms images [C, H, W], but " +
                       dataName_ + " gives samples of rank " + std::to_string(shape.size()));
  if (o_.dataWorkers > 0) {
    dataWorkers_ = o_.dataWorkers;
  } else if (files) {
    // Half the CPUs this process may use decode; the others compute.
    cpu_set_t set;
    int cpus = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
    dataWorkers_ = std::max(1, cpus / 2);
  }
  return Error::success();
}

LoaderOptions Session::loaderOptions(bool training) const {
  LoaderOptions lo;
  lo.batch = s_.batch;
  lo.norm = data_.norm;
  lo.bytes = fwd_->inputs()[0]->type().dtype == ir::DType::U8;
  lo.transform = training ? trainTransform_ : evalTransform_;
  lo.workers = dataWorkers_;
  lo.prefetch = o_.prefetch;
  // The trace records the batches the workers prepare while it records the steps' kernels.
  if (trace_)
    lo.onBatch = [trace = trace_.get(), training](int64_t b, int w, double start, double end) {
      if (trace->wantsKernels())
        trace->addSpan(RunTrace::kWorker + w,
                       std::string(training ? "training" : "evaluation") + " batch " +
                           std::to_string(b + 1),
                       "data", start, end);
    };
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

uint64_t fnv1a(std::string_view text, uint64_t h = 1469598103934665603ull) {
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  return h;
}

// The most of an item's value and note that ranks exchange for a message.
constexpr size_t kShownBytes = 240;

// "WHAT: V1 on rank R, V0 on rank 0", or with the notes when only the hidden
// part differs.
std::string difference(const AgreedItem &item, const std::string &mine, const std::string &theirs,
                       int rank) {
  auto split = [](const std::string &s) {
    size_t cut = s.find('\x1f');
    return std::pair{s.substr(0, cut), cut == std::string::npos ? "" : s.substr(cut + 1)};
  };
  auto [v0, n0] = split(mine);
  auto [v1, n1] = split(theirs);
  std::string r = "rank " + std::to_string(rank);
  if (v0 != v1) return item.what + ": " + v1 + " on " + r + ", " + v0 + " on rank 0";
  if (n0 != n1) return item.what + " (" + n1 + " on " + r + ", " + n0 + " on rank 0)";
  if (!n0.empty()) return item.what + " (" + n0 + " on both)";
  return item.what;
}

} // namespace

std::vector<AgreedItem> Session::agreedItems() const {
  std::vector<AgreedItem> items = o_.agreed;
  for (const ir::RunSettingDef &def : ir::runSettingDefs()) {
    std::string what = "the train setting '" + def.key + "'";
    if (!def.flag.empty()) what += " (--" + def.flag + ")";
    items.push_back({what, ir::runSettingText(s_, def), "", ""});
  }
  std::string labels;
  for (const Dataset *d : {&data_.train, &data_.test}) {
    labels.append(reinterpret_cast<const char *>(d->labels.data()),
                  d->labels.size() * sizeof(d->labels[0]));
    // Image files: the ranks must read the same files, in the same order.
    if (d->files) labels += d->files->names;
  }
  items.push_back({"the data set",
                   data_.description + ", " + std::to_string(data_.train.count) + " training and " +
                       std::to_string(data_.test.count) + " test samples",
                   labels, ""});
  items.push_back({"the kernel backend", "'" + std::string(backend_.name()) + "'", "", ""});
  std::ostringstream program;
  ir::printModule(m_, program, {.locations = false});
  items.push_back({"the compiled train and eval steps (the passes and their options)", "",
                   program.str(), ""});
  return items;
}

Error Session::checkAgreement(const std::vector<AgreedItem> &items) {
  if (ranks() == 1) return Error::success();
  std::vector<uint64_t> mine;
  for (const AgreedItem &item : items) mine.push_back(fnv1a(item.detail, fnv1a(item.value + '\0')));
  std::vector<uint64_t> all(mine.size() * ranks());
  if (Error e = comm_.allgather(mine.data(), mine.size() * sizeof(uint64_t), all.data(),
                                "comparing the ranks' programs at start-up"))
    return e;
  for (size_t k = 0; k < items.size(); ++k)
    for (int r = 1; r < ranks(); ++r) {
      if (all[r * mine.size() + k] == all[k]) continue;
      // Every rank knows which item differs: they exchange what to show of it.
      std::string shown = (items[k].value + '\x1f' + items[k].note).substr(0, kShownBytes - 1);
      shown.resize(kShownBytes, '\0');
      std::string gathered(kShownBytes * size_t(ranks()), '\0');
      if (Error e = comm_.allgather(shown.data(), kShownBytes, gathered.data(),
                                    "comparing the ranks' settings at start-up"))
        return e;
      auto text = [&](int rank) { return std::string(gathered.c_str() + kShownBytes * size_t(rank)); };
      quietError_ = true;
      return Error::make("rank " + std::to_string(r) + " and rank 0 differ in " +
                         difference(items[k], text(0), text(r), r) +
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
  // The pool's threads start now, while the room checked for them is there:
  // libgomp would exit the process at the first kernel if it could not.
  if (Error e = checkThreadRoom(threadCount(), kLaterThreads)) return e;
  startThreadPool();
  if (Error e = checkFits(ParamStore::bytesNeeded(m_), backend_.memoryBytes(),
                          "the parameters and optimizer state of model '" + fwd_->name() + "' need",
                          memoryOwner(backend_)))
    return e;
  // Generating text takes the data set's vocabulary.
  if (o_.predictPath.empty() || o_.generate > 0)
    if (Error e = loadData()) return e;
  // Before anything a rank does differently with other options (a channel
  // made, a step planned) could leave another waiting.
  if (Error e = checkAgreement(agreedItems())) return e;
  SpaceNeed runner{"setting up model '" + fwd_->name() + "'", {}};
  runner.add("its parameters and optimizer state", ParamStore::bytesNeeded(m_));
  runner.add("the thread of its communication queue", threadStackBytes());
  runner.note = heldNote();
  if (Error e = checkAddressSpace(runner, "")) return e;
  runner_ = std::make_unique<ModuleRunner>(m_, backends_, &kernelComm_);
  runner_->setReplay(o_.replay);
  if (runner_->setUpError()) return Error::make(runner_->setUpError().message());
  runner_->setSpaceNote(heldNote());
  if (Error e = initializeParams(runner_->params(), s_.seed)) return e;
  if (!o_.resumePath.empty())
    if (Error e = resume()) return e;
  // Those the module has: optimizer state kept from a run with another optimizer is not.
  if (o_.initWeights)
    for (const auto &p : m_.params())
      if (auto it = o_.initWeights->find(p->name); it != o_.initWeights->end())
        if (Error e = runner_->params().write(p->name, it->second)) return e;
  if (!o_.initFromPath.empty()) {
    // The forward graph's parameters: weights and running statistics, not optimizer state.
    std::set<std::string> weights;
    for (const auto &op : fwd_->ops())
      for (const ir::Value *v : op->operands())
        if (v->param()) weights.insert(v->param()->name);
    if (Error e = loadWeights(o_.initFromPath, weights, runner_->params())) return e;
  }
  if (Error e = checkOutputsAreNoInputs()) return e;
  if (Error e = checkAgreement({{"the progress of the checkpoint to resume",
                                 "epoch " + std::to_string(progress_.epoch) + ", step " +
                                     std::to_string(progress_.stepInEpoch) + " of the epoch",
                                 "", ""}}))
    return e;
  if (Error e = broadcastParams()) return e;
  if (predicting()) return Error::success();
  std::unique_ptr<Communicator> voteChannel;
  if (ranks() > 1) {
    auto dup = comm_.duplicate();
    if (!dup) return dup.takeError();
    voteChannel = std::move(*dup);
  }
  vote_ = std::make_unique<StopVote>(std::move(voteChannel));
  // The train step is planned first, so that its kernels choose the
  // parameters' layouts; the eval step converts where it wants others.
  // This rank's part of the first global batch.
  int64_t global = std::min<int64_t>(s_.batch, static_cast<int64_t>(trainIdx_.size()));
  int64_t first = std::max<int64_t>(1, global * (rank() + 1) / ranks() - global * rank() / ranks());
  if (o_.deterministic) {
    if (Error e = setUpDeterministic()) return e;
  } else if (!o_.evalOnly && global > 0) {
    auto exec = runner_->executor(*train_, first);
    if (!exec) return exec.takeError();
    if (o_.profile) {
      (*exec)->setProfiling(true);
      profile_ = std::make_unique<StepProfile>((*exec)->plan());
    }
  }
  // The eval step too, which a run used to plan only at its first evaluation:
  // a run that does not fit is refused now, not after an epoch of training.
  std::vector<int64_t> evalSizes = batchSizes(data_.test.count, loaderOptions(false));
  if (!evalSizes.empty())
    if (auto exec = runner_->executor(*eval_, evalSizes[0]); !exec) return exec.takeError();
  return checkRoomForTheRest();
}

Error Session::checkRoomForTheRest() {
  SpaceNeed need{"the rest of the run", {}};
  // The plans of the other batch sizes, built when their batches come.
  std::vector<std::pair<const ir::Graph *, int64_t>> later;
  auto addSizes = [&](const ir::Graph *g, std::vector<int64_t> sizes, bool first) {
    for (size_t i = first ? 0 : 1; i < sizes.size(); ++i)
      if (!runner_->plan(*g, sizes[i])) later.push_back({g, sizes[i]});
  };
  if (!o_.evalOnly && !det_) {
    std::vector<int64_t> sizes = batchSizes(static_cast<int64_t>(trainIdx_.size()), loaderOptions(true));
    // The last, partial batch comes only to a run that reaches the end of an epoch.
    int64_t steps = static_cast<int64_t>(trainIdx_.size()) / s_.batch;
    if (o_.maxSteps < 0 || progress_.stepInEpoch + o_.maxSteps > steps) addSizes(train_, sizes, false);
  }
  addSizes(eval_, batchSizes(data_.test.count, loaderOptions(false)), false);
  if (!valIdx_.empty())
    addSizes(eval_, batchSizes(static_cast<int64_t>(valIdx_.size()), loaderOptions(false)), true);
  for (const auto &[g, batch] : later) {
    SpaceNeed plan = runner_->addressSpaceNeed(*g, batch);
    need.add(plan.who, plan.total());
  }
  // The loaders of training and of an evaluation: a thread each, and the
  // batches each holds (two prepared, one being made, two staged).
  uint64_t sample = uint64_t(data_.train.sampleNumel()) * sizeof(float) +
                    uint64_t(data_.train.labelsPerSample) * sizeof(int32_t);
  uint64_t batchBytes = uint64_t(s_.batch) * sample;
  uint64_t loaders = o_.evalOnly ? 1 : 2;
  need.add(o_.evalOnly ? "the data loader's thread and batches" : "the data loaders' threads and batches",
           loaders * (threadStackBytes() + 5 * batchBytes));
  need.note = heldNote();
  return checkAddressSpace(need, "or use a smaller batch");
}

std::string Session::heldNote() const {
  uint64_t data = 0;
  for (const Dataset *d : {&data_.train, &data_.test}) data += d->bytes();
  return data ? formatBytes(data) + " of it for the data set" : "";
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

} // namespace dtnn::runtime::session
