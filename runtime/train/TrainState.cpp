#include "runtime/train/TrainState.h"

#include "runtime/train/Checkpoint.h"
#include "runtime/Init.h"

namespace dtnn::runtime {

namespace {

constexpr const char *kFormat = "dtnn-train-state-1";

Expected<int64_t> metaInt(const std::map<std::string, std::string> &meta, const std::string &key,
                          const std::string &path) {
  auto it = meta.find(key);
  if (it == meta.end()) return Error::make(path + ": checkpoint metadata lacks '" + key + "'");
  try { // std::stoll throws on text that is not a number or out of range
    size_t used = 0;
    long long v = std::stoll(it->second, &used);
    if (used == it->second.size() && v >= 0) return static_cast<int64_t>(v);
  } catch (const std::exception &) {
  }
  return Error::make(path + ": checkpoint metadata '" + key + "' is not a count: '" + it->second +
                     "'");
}

} // namespace

Error initializeParams(ParamStore &store, uint64_t seed) {
  for (const auto &p : store.module().params()) {
    Tensor t(p->type);
    if (Error e = initializeParam(p->init, p->type, seed, p->name, t)) return e;
    if (Error e = store.write(p->name, t)) return e;
  }
  return Error::success();
}

Error saveTrainState(const std::string &path, const std::string &model, const ParamStore &store,
                     const Progress &progress, const std::map<std::string, std::string> &meta) {
  Checkpoint ck;
  for (const auto &p : store.module().params()) {
    auto t = store.read(p->name);
    if (!t) return t.takeError();
    ck.tensors.emplace(p->name, std::move(*t));
  }
  ck.metadata = meta;
  ck.metadata["format"] = kFormat;
  ck.metadata["model"] = model;
  ck.metadata["epoch"] = std::to_string(progress.epoch);
  ck.metadata["step_in_epoch"] = std::to_string(progress.stepInEpoch);
  ck.metadata["step"] = std::to_string(progress.step);
  return saveCheckpoint(path, ck);
}

Error loadWeights(const std::string &path, const std::set<std::string> &names, ParamStore &store) {
  auto ck = loadCheckpoint(path);
  if (!ck) return ck.takeError();
  if (Error why = nonFiniteTensor(*ck))
    return Error::make(path + ": " + why.message() + ": the run that wrote it had diverged; start from an "
                       "earlier checkpoint");
  std::vector<std::string> problems;
  for (const std::string &name : names) {
    const ir::Param *p = store.module().findParam(name);
    auto it = ck->tensors.find(name);
    if (it == ck->tensors.end())
      problems.push_back("'" + name + "' is missing (the model's is " + p->type.str() + ")");
    else if (it->second.type() != p->type)
      problems.push_back("'" + name + "' is " + it->second.type().str() + ", the model's " +
                         p->type.str());
  }
  // Optimizer state is named after its weight: conv2d.0.weight.momentum.
  auto isState = [&](const std::string &name) {
    size_t dot = name.rfind('.');
    return dot != std::string::npos && names.count(name.substr(0, dot));
  };
  for (const auto &[name, t] : ck->tensors)
    if (!names.count(name) && !store.module().findParam(name) && !isState(name))
      problems.push_back("'" + name + "' (" + t.type().str() + ") is not a tensor of the model");
  if (!problems.empty()) {
    std::string text = path + ": cannot take the model's weights from it: ";
    constexpr size_t kShown = 10;
    for (size_t i = 0; i < problems.size() && i < kShown; ++i) text += (i ? "; " : "") + problems[i];
    if (problems.size() > kShown)
      text += "; and " + std::to_string(problems.size() - kShown) + " more";
    return Error::make(text);
  }
  for (const std::string &name : names)
    if (Error e = store.write(name, ck->tensors.at(name))) return e;
  return Error::success();
}

Expected<std::map<std::string, std::string>> loadTrainState(const std::string &path,
                                                            const std::string &model,
                                                            ParamStore &store, Progress &progress) {
  auto ck = loadCheckpoint(path);
  if (!ck) return ck.takeError();
  auto &meta = ck->metadata;
  if (meta.count("format") == 0 || meta["format"] != kFormat)
    return Error::make(path + ": not a dtnn training checkpoint (metadata 'format' is '" +
                       (meta.count("format") ? meta["format"] : "") + "', expected '" + kFormat +
                       "')");
  if (meta["model"] != model)
    return Error::make(path + ": checkpoint is for model '" + meta["model"] + "', not '" + model +
                       "'");
  for (const auto &p : store.module().params()) {
    auto it = ck->tensors.find(p->name);
    if (it == ck->tensors.end())
      return Error::make(path + ": checkpoint lacks parameter '" + p->name +
                         "' (was it saved with another optimizer, other optimizer settings or "
                         "another model?)");
    if (it->second.type() != p->type)
      return Error::make(path + ": parameter '" + p->name + "' is " + it->second.type().str() +
                         " in the checkpoint but " + p->type.str() + " in the model");
  }
  for (const auto &[name, t] : ck->tensors)
    if (!store.module().findParam(name))
      return Error::make(path + ": checkpoint holds '" + name +
                         "', which the model does not have (was it saved with another optimizer "
                         "or other optimizer settings?)");
  if (Error why = nonFiniteTensor(*ck))
    return Error::make(path + ": " + why.message() + ": the run that wrote it had diverged; start from an "
                       "earlier checkpoint");
  Progress loaded;
  for (auto [key, field] : {std::pair{"epoch", &loaded.epoch},
                            std::pair{"step_in_epoch", &loaded.stepInEpoch},
                            std::pair{"step", &loaded.step}}) {
    auto v = metaInt(meta, key, path);
    if (!v) return v.takeError();
    *field = *v;
  }
  for (const auto &[name, t] : ck->tensors)
    if (Error e = store.write(name, t)) return e;
  progress = loaded;
  return meta;
}

} // namespace dtnn::runtime
