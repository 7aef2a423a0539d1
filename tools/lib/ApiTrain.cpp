// dtnn::Model (dtnn/Train.h): each call compiles the model's text afresh through the front end
// and the pass pipelines dtnn-run uses (train, data-parallel over this process's ranks, update;
// or inference for predict), then runs a training session (runtime/train) on the program's
// samples, or the forward graph directly. The weights live in the Model between calls, as host
// tensors by parameter name. Under mpirun, the processes share one communicator, made when the
// first call needs it.
#include "dtnn/Compiler.h"
#include "dtnn/Registry.h"
#include "dtnn/Train.h"

#include "frontend/Frontend.h"
#include "ir/Printer.h"
#include "ir/RunSettings.h"
#include "ir/SourceFile.h"
#include "passes/PassManager.h"
#include "passes/Pipelines.h"
#include "runtime/BackendRegistry.h"
#include "runtime/ModuleRunner.h"
#include "runtime/comm/Mpi.h"
#include "runtime/train/FusionTargets.h"
#include "runtime/train/TrainState.h"
#include "runtime/train/data/Samples.h"
#include "runtime/train/Trainer.h"
#include "tools/lib/CommandLine.h"

#include <cstring>
#include <sstream>

namespace dtnn {

struct Model::Impl {
  std::string name, text, model; // the source's name and text, and which model of it
  std::string ir;
  std::vector<std::string> params;                // the module's parameters, by name
  std::map<std::string, runtime::Tensor> weights; // empty: the initializers'
  std::vector<std::map<std::string, double>> history;
};

namespace {

// This process's ranks: MPI's when mpirun started it, else itself alone.
Expected<runtime::Communicator *> communicator() {
  static std::unique_ptr<runtime::Communicator> comm;
  if (comm) return comm.get();
  if (runtime::launchedByMpi()) {
    auto c = runtime::makeMpiCommunicator({});
    if (!c) return c.takeError();
    comm = std::move(*c);
  } else {
    comm = runtime::makeLocalCommunicator();
  }
  return comm.get();
}

// The model's module after the passes of `pipeline`, with the train settings overridden by
// `settings` (dtnn-run's flag names).
Expected<std::unique_ptr<ir::Module>> compile(const Model::Impl &m, const std::string &pipeline,
                                              const std::map<std::string, std::string> &settings) {
  if (Error e = registerBuiltins()) return e;
  SourceManager sm;
  std::ostringstream diagnostics;
  DiagnosticEngine diags(sm, diagnostics);
  frontend::CompileOptions co;
  co.modelName = m.model;
  co.importDirs.push_back(standardLibraryDir());
  auto module = frontend::compileSource(m.name, m.text, co, sm, diags);
  if (!module) return Error::make(diagnostics.str());
  cli::ParsedArgs flags;
  for (const auto &[k, v] : settings) {
    bool known = false;
    for (const ir::RunSettingDef &d : ir::runSettingDefs()) known = known || d.flag == k;
    if (!known) return Error::make("unknown train setting '" + k + "' (settings take dtnn-run's flag names: batch, epochs, lr, ...)");
    flags.values[k] = {v};
  }
  if (Error e = cli::applySettingFlags(flags, module->trainConfig())) return e;
  if (pipeline.empty()) return module;
  // A train section's (or the settings') precision = bf16 gains the mixed-precision pass, as in
  // dtnn-run.
  auto config = ir::readRunSettings(module->trainConfig());
  if (!config) return config.takeError();
  auto target = runtime::makeFusionTarget("");
  if (!target) return target.takeError();
  passes::PassManagerOptions po;
  po.target = target->get();
  passes::PassManager pm(po);
  if (Error e = pm.parsePipeline(passes::withPrecision(pipeline, config->precision.name))) return e;
  if (Error e = pm.run(*module)) return e;
  return module;
}

Expected<ir::DType> dtypeOf(const std::string &name) {
  auto t = ir::parseDType(name);
  if (!t) return Error::make("unknown element type '" + name + "'");
  return *t;
}

// The samples as a data set: u8 images or i32 tokens, and i32 labels.
Expected<Dataset> dataset(const Samples &s, const std::string &which) {
  const HostTensor &x = s.inputs, &y = s.labels;
  if (x.shape.empty() || y.shape.empty() || x.shape[0] != y.shape[0])
    return Error::make(which + " samples: inputs " + std::to_string(x.shape.size()) +
                       "-d and labels of another count (the first dimension of both counts them)");
  if (uint64_t(x.numel()) * (x.dtype == "u8" ? 1 : 4) != x.bytes.size() ||
      uint64_t(y.numel()) * 4 != y.bytes.size())
    return Error::make(which + " samples: the bytes do not match the shapes and types");
  if (y.dtype != "i32") return Error::make(which + " labels must be i32, got " + y.dtype);
  Dataset d;
  d.count = x.shape[0];
  d.sampleShape.assign(x.shape.begin() + 1, x.shape.end());
  d.labels.resize(size_t(y.numel()));
  std::memcpy(d.labels.data(), y.bytes.data(), y.bytes.size());
  d.labelsPerSample = d.count ? y.numel() / d.count : 1;
  if (x.dtype == "u8") {
    d.pixels = x.bytes;
  } else if (x.dtype == "i32") {
    d.tokenSamples = true;
    d.noun = "sequences";
    d.tokens.resize(size_t(x.numel()));
    std::memcpy(d.tokens.data(), x.bytes.data(), x.bytes.size());
  } else {
    return Error::make(which + " inputs must be u8 images or i32 tokens, got " + x.dtype);
  }
  for (int32_t l : d.labels) d.numClasses = std::max(d.numClasses, l + 1);
  return d;
}

Expected<std::unique_ptr<runtime::BackendSet>> backendsFor(const TrainOptions &o) {
  runtime::BackendOptions bo;
  bo.threads = o.threads;
  auto b = runtime::BackendSet::create(o.backend, bo);
  if (!b) return b.takeError();
  return std::make_unique<runtime::BackendSet>(std::move(*b));
}

// Runs a training session (or, evalOnly, an evaluation) of `m` on `train` and `test`.
Error runSession(Model::Impl &m, const Samples &train, const Samples &test,
                 const TrainOptions &o, bool evalOnly,
                 std::map<std::string, double> *evaluated) {
  auto comm = communicator();
  if (!comm) return comm.takeError();
  passes::DataParallelOptions dp;
  dp.ranks = (*comm)->size();
  auto module = compile(m, passes::trainStepPipeline(dp), o.settings);
  if (!module) return module.takeError();
  auto settings = ir::readRunSettings((*module)->trainConfig());
  if (!settings) return settings.takeError();
  auto backends = backendsFor(o);
  if (!backends) return backends.takeError();
  auto data = std::make_shared<DataSplits>();
  for (auto [set, samples, which] : {std::tuple{&data->train, &train, "training"},
                                     std::tuple{&data->test, &test, "test"}}) {
    auto d = dataset(*samples, which);
    if (!d) return d.takeError();
    *set = std::move(*d);
  }
  data->norm.mean = o.mean;
  data->norm.std = o.std;
  if (o.mean.size() != o.std.size()) return Error::make("mean and std need as many values");
  data->description = "memory: " + std::to_string(data->train.count) + " train, " +
                      std::to_string(data->test.count) + " test samples";
  runtime::RunOptions ro;
  ro.comm = *comm;
  ro.memoryData = data;
  ro.evalOnly = evalOnly;
  if (!m.weights.empty()) ro.initWeights = &m.weights;
  ro.onStep = o.onStep;
  std::vector<std::map<std::string, double>> epochs;
  ro.onEpoch = [&](const runtime::EpochRecord &r) {
    std::map<std::string, double> figures(r.values.begin(), r.values.end());
    if (!evalOnly && o.onEpoch) o.onEpoch(r.epoch, figures);
    epochs.push_back(std::move(figures));
  };
  ro.onFinish = [&](const runtime::ParamStore &store) {
    std::map<std::string, runtime::Tensor> weights;
    for (const auto &p : (*module)->params()) {
      auto t = store.read(p->name);
      if (t) weights.emplace(p->name, std::move(*t));
    }
    m.weights = std::move(weights);
  };
  cli::NullStream quiet;
  std::ostream &out = o.out && (*comm)->rank() == 0 ? *o.out : quiet;
  std::ostringstream err;
  runtime::RunStatus st = runtime::train(**module, *settings, ro, **backends, out, err);
  if (st != runtime::RunStatus::Ok) {
    std::string message = err.str();
    const std::string prefix = "dtnn-run: error: ";
    if (message.starts_with(prefix)) message = message.substr(prefix.size());
    while (!message.empty() && message.back() == '\n') message.pop_back();
    return Error::make(message.empty() ? "the run failed" : message);
  }
  if (evaluated && !epochs.empty()) *evaluated = epochs.back();
  if (!evalOnly) m.history.insert(m.history.end(), epochs.begin(), epochs.end());
  return Error::success();
}

HostTensor toHost(const runtime::Tensor &t) {
  HostTensor h;
  h.dtype = std::string(ir::dtypeName(t.type().dtype));
  h.shape = t.type().dims;
  const auto *p = static_cast<const uint8_t *>(t.raw());
  h.bytes.assign(p, p + t.bytes());
  return h;
}

} // namespace

int processRank() {
  auto comm = communicator();
  return comm ? (*comm)->rank() : 0;
}

int processCount() {
  auto comm = communicator();
  return comm ? (*comm)->size() : 1;
}

Model::Model(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Model::Model(Model &&) noexcept = default;
Model &Model::operator=(Model &&) noexcept = default;
Model::~Model() = default;

// A model of `text` (named `name`; `model` picks one of several), compiled once to check it and
// to keep its IR and parameter names.
Expected<Model> Model::compiled(std::string name, std::string text, std::string model) {
  auto impl = std::make_unique<Impl>();
  impl->name = std::move(name);
  impl->text = std::move(text);
  impl->model = std::move(model);
  auto module = compile(*impl, "default", {});
  if (!module) return module.takeError();
  impl->ir = ir::printModule(**module);
  for (const auto &p : (*module)->params()) impl->params.push_back(p->name);
  return Model(std::move(impl));
}

Expected<Model> Model::fromSource(const std::string &name, const std::string &text) {
  return compiled(name, text, "");
}

Expected<Model> Model::fromFile(const std::string &path, const std::string &model) {
  Expected<std::string> text = readSourceFile(path, ".dtnn file");
  if (!text) return text.takeError();
  return compiled(path, std::move(*text), model);
}

Expected<Model> Model::fromBuilder(const ModelBuilder &b) {
  return fromSource(b.name() + ".dtnn", b.source());
}

const std::string &Model::ir() const { return impl_->ir; }

Error Model::train(const Samples &train, const Samples &test, const TrainOptions &o) {
  return runSession(*impl_, train, test, o, false, nullptr);
}

Expected<std::map<std::string, double>> Model::evaluate(const Samples &test, const TrainOptions &o) {
  std::map<std::string, double> figures;
  if (Error e = runSession(*impl_, test, test, o, true, &figures)) return e;
  return figures;
}

Expected<HostTensor> Model::predict(const HostTensor &inputs, const TrainOptions &o) {
  auto module = compile(*impl_, "inference", o.settings);
  if (!module) return module.takeError();
  const ir::Graph *g = (*module)->graphs().front().get();
  const ir::TensorType &want = g->inputs()[0]->type();
  auto dtype = dtypeOf(inputs.dtype);
  if (!dtype) return dtype.takeError();
  bool normalize = *dtype == ir::DType::U8 && want.dtype == ir::DType::F32;
  std::vector<int64_t> dims = inputs.shape;
  if (dims.size() != want.rank() || dims.empty() ||
      !std::equal(dims.begin() + 1, dims.end(), want.dims.begin() + 1) ||
      (*dtype != want.dtype && !normalize))
    return Error::make("predict: inputs " + ir::TensorType(*dtype, dims).str() +
                       " do not fit the model's input " + want.str());
  auto backends = backendsFor(o);
  if (!backends) return backends.takeError();
  runtime::ModuleRunner runner(**module, **backends);
  if (runner.setUpError()) return Error::make(runner.setUpError().message());
  if (Error e = runtime::initializeParams(runner.params(), 0)) return e;
  for (const auto &p : (*module)->params())
    if (auto it = impl_->weights.find(p->name); it != impl_->weights.end())
      if (Error e = runner.params().write(p->name, it->second)) return e;
  auto exec = runner.executor(*g, dims[0]);
  if (!exec) return exec.takeError();
  std::vector<float> floats;
  const void *data = inputs.bytes.data();
  size_t bytes = inputs.bytes.size();
  if (normalize) {
    // Through the loader's own sample writer, as training normalizes them.
    if (o.mean.size() != o.std.size()) return Error::make("mean and std need as many values");
    Dataset images;
    images.count = dims[0];
    images.sampleShape.assign(dims.begin() + 1, dims.end());
    images.pixels = inputs.bytes;
    SampleWriter writer(images, Normalization{o.mean, o.std}, ImageTransform{}, 0);
    SampleScratch scratch;
    BadImageLog bad;
    floats.resize(size_t(inputs.numel()));
    for (int64_t i = 0; i < images.count; ++i)
      if (auto e = writer.write(i, 0, floats.data() + i * images.sampleNumel(), scratch, bad); !e)
        return e.takeError();
    data = floats.data();
    bytes = floats.size() * sizeof(float);
  }
  (*exec)->setInput(0, data, bytes);
  if (Error e = (*exec)->run()) return e;
  return toHost((*exec)->output(0));
}

std::vector<std::string> Model::weightNames() const {
  if (impl_->weights.empty()) return impl_->params;
  std::vector<std::string> names;
  for (const auto &[name, t] : impl_->weights) names.push_back(name);
  return names;
}

Expected<HostTensor> Model::weight(const std::string &name) const {
  auto it = impl_->weights.find(name);
  if (it == impl_->weights.end())
    return Error::make(impl_->weights.empty() ? "the model has not been trained yet"
                                              : "no weight '" + name + "'");
  return toHost(it->second);
}

const std::vector<std::map<std::string, double>> &Model::history() const { return impl_->history; }

} // namespace dtnn
