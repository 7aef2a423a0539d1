#include "ir/RunSettings.h"

#include "ir/Diagnostics.h"
#include "ir/Registry.h"
#include "ir/SettingChoices.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

namespace dtnn::ir {

namespace {

std::string join(const std::vector<std::string> &names) {
  std::string s;
  for (const std::string &n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

const char *kindDescription(AttrKind k) {
  switch (k) {
  case AttrKind::Int: return "an integer";
  case AttrKind::Float: return "a number";
  case AttrKind::Bool: return "true or false";
  case AttrKind::String: return "a string";
  case AttrKind::Ints: return "a list of integers";
  case AttrKind::Floats: return "a list of numbers";
  }
  return "a value";
}

const SettingChoice *findChoice(const RunSettingDef &def, const std::string &name,
                                std::vector<SettingChoice> &storage) {
  storage = settingChoices(def.key);
  for (const SettingChoice &c : storage)
    if (c.name == name) return &c;
  return nullptr;
}

// "an optimizer", "a loss".
std::string article(const std::string &noun) {
  return (std::string("aeiou").find(noun[0]) == std::string::npos ? "a " : "an ") + noun;
}

// The metric names of "accuracy,top5", the default metric first and without repeats.
std::vector<std::string> metricNames(const std::string &text) {
  std::vector<std::string> out = {defaultSettingChoice("metrics")};
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty() && std::find(out.begin(), out.end(), item) == out.end()) out.push_back(item);
  return out;
}

// The field of a Choice setting; null for early_stopping, which is optional.
SettingCall *callOf(RunSettings &s, const std::string &key) {
  if (key == "augment") return &s.augment;
  if (key == "optimizer") return &s.optimizer;
  if (key == "loss") return &s.loss;
  if (key == "data") return &s.data;
  if (key == "schedule") return &s.schedule;
  if (key == "init_defaults") return &s.initDefaults;
  if (key == "precision") return &s.precision;
  return nullptr;
}

} // namespace

const std::vector<RunSettingDef> &runSettingDefs() {
  using K = SettingKind;
  static const std::vector<RunSettingDef> defs = {
      {"augment", K::Choice, "the augmentation of training images", 0, "augment", "NAME",
       "augmentation", {"augment"}},
      {"batch", K::Count, "samples per step (over all ranks)", 1, "batch", "N"},
      {"checkpoint_every", K::Count, "with --save, also save every N epochs", 0,
       "checkpoint-every", "N"},
      {"data", K::Choice, "the data source", 0, "data-source", "NAME", "data source", {"data"}},
      {"early_stopping", K::Choice, "", 0, "", "", "early stopping", {"early_stopping"}},
      {"epochs", K::Count, "epochs to train", 0, "epochs", "N"},
      {"init_defaults", K::Choice, "", 0, "", "", "initialization", {"init_defaults"}},
      {"loss", K::Choice, "", 0, "", "", "loss", {"loss"}},
      {"metrics", K::Metrics, ""},
      {"optimizer", K::Choice, "the optimizer", 0, "optimizer",
       "NAME", "optimizer", {"optimizer"}},
      {"precision", K::Choice, "the type convolutions, dense layers and matmuls compute in", 0,
       "precision", "TYPE", "precision", {"precision"}},
      {"schedule", K::Choice, "", 0, "", "", "schedule", {"schedule"}},
      {"seed", K::Count, "seed of initialization, shuffling and dropout", 0, "seed", "S"},
      {"validation", K::Fraction, "hold out this fraction of the training set for validation", 0,
       "validation", "F"},
      {"optimizer.lr", K::Rate, "learning rate", 0, "lr", "LR"},
  };
  return defs;
}

std::vector<std::string> trainSectionKeys() {
  std::vector<std::string> keys;
  for (const RunSettingDef &d : runSettingDefs())
    if (d.key.find('.') == std::string::npos) keys.push_back(d.key);
  return keys;
}

const RunSettingDef *findRunSetting(std::string_view key) {
  for (const RunSettingDef &d : runSettingDefs())
    if (d.key == key) return &d;
  return nullptr;
}

std::string settingExpectation(const RunSettingDef &def) {
  switch (def.kind) {
  case SettingKind::Count: return "an integer of at least " + std::to_string(def.least);
  case SettingKind::Fraction: return "a fraction in [0, 1)";
  case SettingKind::Rate: return "a positive number";
  case SettingKind::Choice: return "the name of " + article(def.noun);
  case SettingKind::Metrics: return "names of metrics, such as [" + metricExamples() + "]";
  }
  return "";
}

Error checkSettingValue(const RunSettingDef &def, AttrValue &value) {
  std::string what = "train setting '" + def.key + "'";
  if (def.key == "optimizer.lr") what = "the learning rate";
  std::string wrong = what + " must be " + settingExpectation(def);
  switch (def.kind) {
  case SettingKind::Count: {
    auto *i = std::get_if<int64_t>(&value);
    return !i || *i < def.least ? Error::make(wrong) : Error::success();
  }
  case SettingKind::Fraction:
  case SettingKind::Rate: {
    std::optional<AttrValue> f = coerceAttr(value, AttrKind::Float);
    double x = f ? std::get<double>(*f) : std::nan("");
    if (def.kind == SettingKind::Fraction && !(x >= 0 && x < 1)) return Error::make(wrong);
    if (def.kind == SettingKind::Rate && !(x > 0 && std::isfinite(x))) return Error::make(wrong);
    value = x;
    return Error::success();
  }
  case SettingKind::Metrics: {
    auto *s = std::get_if<std::string>(&value);
    if (!s) return Error::make(wrong);
    for (const std::string &m : metricNames(*s))
      if (Error e = checkMetricName(m)) return e;
    return Error::success();
  }
  case SettingKind::Choice: {
    auto *s = std::get_if<std::string>(&value);
    if (!s) return Error::make(what + " must name " + article(def.noun) + ", got " + attrValueStr(value));
    return checkSettingChoice(def, *s);
  }
  }
  return Error::success();
}

Error checkSettingChoice(const RunSettingDef &def, const std::string &name) {
  std::vector<SettingChoice> all;
  if (findChoice(def, name, all)) return Error::success();
  std::vector<std::string> names;
  for (const SettingChoice &c : all) names.push_back(c.name);
  std::string hint = closestMatch(name, names);
  std::string plural = def.noun == "loss" ? "losses" : def.noun + "s";
  return Error::make("unknown " + def.noun + " '" + name + "'" +
                     (hint.empty() ? "" : "; did you mean '" + hint + "'?") + " (known " + plural +
                     ": " + join(names) + ")");
}

Error checkSettingArg(const RunSettingDef &def, const std::string &choice,
                      const std::string &arg, AttrValue &value) {
  std::vector<SettingChoice> all;
  const SettingChoice *c = findChoice(def, choice, all);
  if (!c) return checkSettingChoice(def, choice);
  std::string what = def.noun + " '" + choice + "'";
  std::vector<std::string> names;
  for (const ChoiceArg &a : c->args) {
    if (a.name != arg) {
      names.push_back(a.name);
      continue;
    }
    if (const RunSettingDef *own = findRunSetting(def.key + "." + arg))
      return checkSettingValue(*own, value);
    std::optional<AttrValue> v = coerceAttr(value, a.kind);
    if (!v)
      return Error::make(what + " argument '" + arg + "' must be " + kindDescription(a.kind) +
                         ", got " + attrValueStr(value));
    value = std::move(*v);
    return Error::success();
  }
  if (names.empty()) return Error::make(what + " takes no arguments, got '" + arg + "'");
  std::string hint = closestMatch(arg, names);
  return Error::make(what + " has no argument '" + arg + "'" +
                     (hint.empty() ? "" : "; did you mean '" + hint + "'?") + " (arguments: " +
                     join(names) + ")");
}

Expected<AttrMap> checkSettingArgs(const RunSettingDef &def, const std::string &choice,
                                   const AttrMap &args) {
  AttrMap checked;
  for (const auto &[arg, given] : args.entries()) {
    AttrValue v = given;
    if (Error e = checkSettingArg(def, choice, arg, v)) return e;
    checked.set(arg, std::move(v));
  }
  return checked;
}

std::string metricExamples() {
  std::string out;
  for (const SettingChoice &c : settingChoices("metrics"))
    out += (out.empty() ? "" : ", ") + c.name + (c.numbered ? "5" : "");
  return out;
}

Error checkMetricName(const std::string &name) {
  std::string known;
  for (const SettingChoice &c : settingChoices("metrics")) {
    if (!c.numbered && name == c.name) return Error::success();
    size_t n = c.name.size();
    bool digits = c.numbered && name.size() > n && name.size() < n + 6 &&
                  name.compare(0, n, c.name) == 0 &&
                  std::all_of(name.begin() + n, name.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
    if (digits && std::stoll(name.substr(n)) >= 1) return Error::success();
    known += (known.empty() ? "" : ", ") + c.name;
    if (c.numbered) known += "K such as " + c.name + "5";
  }
  return Error::make("unknown metric '" + name + "' (known: " + known + ")");
}

Expected<RunSettings> readRunSettings(const AttrMap &config) {
  RunSettings s;
  // Choices first: their arguments are checked against the choice made.
  for (const RunSettingDef &def : runSettingDefs()) {
    if (def.kind != SettingKind::Choice) continue;
    SettingCall *call = callOf(s, def.key);
    const AttrValue *v = config.find(def.key);
    if (!v) continue;
    AttrValue name = *v;
    if (Error e = checkSettingValue(def, name)) return e;
    if (call) call->name = std::get<std::string>(name);
    else s.earlyStopping.emplace(); // early_stopping
  }
  for (const auto &[key, raw] : config.entries()) {
    AttrValue value = raw;
    const RunSettingDef *def = findRunSetting(key);
    size_t dot = key.find('.');
    if (def && def->kind == SettingKind::Choice) continue;
    if (!def && dot == std::string::npos) {
      std::string hint = closestMatch(key, trainSectionKeys());
      return Error::make("unknown train setting '" + key + "'" +
                         (hint.empty() ? "" : "; did you mean '" + hint + "'?"));
    }
    if (dot != std::string::npos) {
      std::string prefix = key.substr(0, dot), arg = key.substr(dot + 1);
      const RunSettingDef *owner = findRunSetting(prefix);
      if (!owner || owner->kind != SettingKind::Choice)
        return Error::make("unknown train setting '" + key + "'");
      SettingCall *call = callOf(s, prefix);
      std::string chosen = call ? call->name : "early_stopping";
      if (!call && !s.earlyStopping)
        return Error::make("train setting '" + key + "' is given without early_stopping");
      if (Error e = checkSettingArg(*owner, chosen, arg, value)) return e;
      (call ? call->args : *s.earlyStopping).set(arg, value);
      if (key == "optimizer.lr") s.lr = std::get<double>(value);
      continue;
    }
    if (Error e = checkSettingValue(*def, value)) return e;
    if (key == "batch") s.batch = std::get<int64_t>(value);
    else if (key == "epochs") s.epochs = std::get<int64_t>(value);
    else if (key == "seed") s.seed = static_cast<uint64_t>(std::get<int64_t>(value));
    else if (key == "checkpoint_every") s.checkpointEvery = std::get<int64_t>(value);
    else if (key == "validation") s.validation = std::get<double>(value);
    else if (key == "metrics") s.metrics = metricNames(std::get<std::string>(value));
  }
  return s;
}

std::string runSettingText(const RunSettings &s, const RunSettingDef &def) {
  auto call = [](const std::string &name, const AttrMap &args) {
    std::string text;
    for (const auto &[k, v] : args.entries())
      if (k != "lr") text += (text.empty() ? "" : ", ") + k + "=" + attrValueStr(v);
    return name + (text.empty() ? "" : "(" + text + ")");
  };
  RunSettings copy = s;
  if (SettingCall *c = callOf(copy, def.key)) return call(c->name, c->args);
  if (def.key == "early_stopping")
    return s.earlyStopping ? call("early_stopping", *s.earlyStopping) : "none";
  if (def.key == "batch") return std::to_string(s.batch);
  if (def.key == "epochs") return std::to_string(s.epochs);
  if (def.key == "seed") return std::to_string(s.seed);
  if (def.key == "checkpoint_every") return std::to_string(s.checkpointEvery);
  if (def.key == "validation") return formatDouble(s.validation);
  if (def.key == "optimizer.lr") return formatDouble(s.lr);
  std::string names;
  for (const std::string &m : s.metrics) names += (names.empty() ? "" : ",") + m;
  return names; // metrics
}

Error setRunSetting(AttrMap &config, const RunSettingDef &def, AttrValue value) {
  if (Error e = checkSettingValue(def, value)) return e;
  const AttrValue *old = config.find(def.key);
  if (def.kind == SettingKind::Choice && (!old || *old != value)) {
    // The arguments given belong to the old choice; keep those with a def of their own.
    AttrMap kept;
    std::string prefix = def.key + ".";
    for (const auto &[k, v] : config.entries())
      if (!k.starts_with(prefix) || findRunSetting(k)) kept.set(k, v);
    config = kept;
  }
  config.set(def.key, std::move(value));
  return Error::success();
}

// The choices of the Choice and Metrics settings (ir/SettingChoices.h): registered by the layers
// that implement them, read by the schema above.


namespace {

// One registry per setting, created when its first choice registers.
std::map<std::string, Registry<SettingChoice>> &registries() {
  static std::map<std::string, Registry<SettingChoice>> all;
  return all;
}

const Registry<SettingChoice> *registryOf(const std::string &setting) {
  auto it = registries().find(setting);
  return it == registries().end() ? nullptr : &it->second;
}

} // namespace

Error registerSettingChoice(const std::string &setting, SettingChoice c,
                            const std::string &origin) {
  const RunSettingDef *def = findRunSetting(setting);
  if (!def || (def->kind != SettingKind::Choice && def->kind != SettingKind::Metrics))
    return Error::make(origin + " registers '" + c.name + "' for '" + setting +
                       "', which is not a setting that names a choice");
  std::string noun = def->kind == SettingKind::Metrics ? "metric" : def->noun;
  auto [it, fresh] = registries().try_emplace(setting, noun);
  if (c.isDefault && !defaultSettingChoice(setting).empty())
    return Error::make(origin + " declares '" + c.name + "' the default " + noun + ", but '" +
                       defaultSettingChoice(setting) + "' already is");
  std::string name = c.name;
  return it->second.add(name, origin, std::move(c));
}

Error registerPrecisionChoices() {
  if (Error e = registerSettingChoice(
          "precision", {"f32", {}, "every op computes in float32", true}, kBuiltinOrigin))
    return e;
  return registerSettingChoice(
      "precision",
      {"bf16",
       {},
       "mixed precision: convolutions, dense layers, matmuls and attention in bfloat16 with "
       "float32 accumulation and float32 master weights (the mixed-precision pass)",
       false},
      kBuiltinOrigin);
}

std::vector<SettingChoice> settingChoices(const std::string &setting) {
  std::vector<SettingChoice> out;
  if (const Registry<SettingChoice> *r = registryOf(setting))
    for (const SettingChoice *c : r->entries()) out.push_back(*c);
  return out;
}

std::string defaultSettingChoice(const std::string &setting) {
  if (const Registry<SettingChoice> *r = registryOf(setting))
    for (const SettingChoice *c : r->entries())
      if (c->isDefault) return c->name;
  return "";
}

std::string settingChoiceOrigin(const std::string &setting, const std::string &name) {
  const Registry<SettingChoice> *r = registryOf(setting);
  return r ? r->origin(name) : "";
}

} // namespace dtnn::ir
