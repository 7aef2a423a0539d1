#include "ir/InitSpec.h"

#include "ir/Diagnostics.h"
#include "ir/SettingChoices.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <optional>

namespace dtnn::ir {

namespace {

enum class ArgKind { Number, Mode, Nonlinearity };

struct InitArg {
  const char *name;
  ArgKind kind;
  std::optional<double> number; // default of a Number; none: required
  const char *word = "";        // default of a Mode or Nonlinearity
};

enum class Rule {
  Zeros,
  Ones,
  Constant,
  Uniform,
  Normal,
  TruncNormal,
  Xavier,
  Kaiming,
  He,
  Lecun,
  Embedding
};

struct InitDef {
  const char *name;
  Rule rule;
  bool normal; // the normal form of Xavier, Kaiming, He and LeCun
  std::vector<InitArg> args;
};

const std::vector<InitDef> &defs() {
  static const std::vector<InitArg> gain = {{"gain", ArgKind::Number, 1.0}};
  static const std::vector<InitArg> kaiming = {
      {"a", ArgKind::Number, 0.0},
      {"mode", ArgKind::Mode, std::nullopt, "fan_in"},
      {"nonlinearity", ArgKind::Nonlinearity, std::nullopt, "leaky_relu"}};
  static const std::vector<InitDef> d = {
      {"constant", Rule::Constant, false, {{"val", ArgKind::Number, std::nullopt}}},
      {"embedding", Rule::Embedding, true, {{"padding_idx", ArgKind::Number, -1.0}}},
      {"glorot_normal", Rule::Xavier, true, gain},
      {"glorot_uniform", Rule::Xavier, false, gain},
      {"he_normal", Rule::He, true, {}},
      {"he_uniform", Rule::He, false, {}},
      {"kaiming_normal", Rule::Kaiming, true, kaiming},
      {"kaiming_uniform", Rule::Kaiming, false, kaiming},
      {"lecun_normal", Rule::Lecun, true, {}},
      {"lecun_uniform", Rule::Lecun, false, {}},
      {"normal",
       Rule::Normal,
       true,
       {{"mean", ArgKind::Number, 0.0}, {"std", ArgKind::Number, 1.0}}},
      {"ones", Rule::Ones, false, {}},
      {"trunc_normal",
       Rule::TruncNormal,
       true,
       {{"mean", ArgKind::Number, 0.0},
        {"std", ArgKind::Number, 1.0},
        {"a", ArgKind::Number, -2.0},
        {"b", ArgKind::Number, 2.0}}},
      {"uniform", Rule::Uniform, false, {{"a", ArgKind::Number, 0.0}, {"b", ArgKind::Number, 1.0}}},
      {"xavier_normal", Rule::Xavier, true, gain},
      {"xavier_uniform", Rule::Xavier, false, gain},
      {"zeros", Rule::Zeros, false, {}},
  };
  return d;
}

const InitDef *findDef(const std::string &name) {
  for (const InitDef &d : defs())
    if (name == d.name) return &d;
  return nullptr;
}

const std::vector<std::string> kNonlinearities = {
    "linear", "conv1d", "conv2d", "conv3d", "sigmoid", "tanh", "relu", "leaky_relu", "selu"};

// torch.nn.init.calculate_gain.
double gainOf(const std::string &nonlinearity, double a) {
  if (nonlinearity == "tanh") return 5.0 / 3;
  if (nonlinearity == "relu") return std::sqrt(2.0);
  if (nonlinearity == "leaky_relu") return std::sqrt(2.0 / (1 + a * a));
  if (nonlinearity == "selu") return 0.75;
  return 1;
}

std::string trim(const std::string &s) {
  size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

std::string argList(const InitDef &d) {
  std::string s;
  for (const InitArg &a : d.args) s += (s.empty() ? "" : ", ") + std::string(a.name);
  return s.empty() ? "none" : s;
}

// Binds one written argument ("std=0.02" or "0.02") of initializer `d` into `spec`.
Error bindArg(const InitDef &d, const std::string &text, size_t &positional, InitSpec &spec) {
  std::string key, value = trim(text);
  size_t eq = text.find('=');
  if (eq != std::string::npos) {
    key = trim(text.substr(0, eq));
    value = trim(text.substr(eq + 1));
  }
  const InitArg *arg = nullptr;
  if (key.empty()) {
    if (positional >= d.args.size())
      return Error::make("initializer '" + std::string(d.name) + "' takes " +
                         std::to_string(d.args.size()) + " argument" +
                         (d.args.size() == 1 ? "" : "s") + " (" + argList(d) + ")");
    arg = &d.args[positional++];
  } else {
    for (const InitArg &a : d.args)
      if (key == a.name) arg = &a;
    if (!arg)
      return Error::make("initializer '" + std::string(d.name) + "' has no argument '" + key +
                         "' (arguments: " + argList(d) + ")");
  }
  std::string what = "argument '" + std::string(arg->name) + "' of '" + d.name + "'";
  if (spec.numbers.count(arg->name) || spec.words.count(arg->name))
    return Error::make(what + " is given twice");
  if (arg->kind == ArgKind::Number) {
    char *end = nullptr;
    double v = std::strtod(value.c_str(), &end);
    if (value.empty() || *end || !std::isfinite(v))
      return Error::make(what + " must be a number, got '" + value + "'");
    spec.numbers[arg->name] = v;
  } else if (arg->kind == ArgKind::Mode) {
    if (value != "fan_in" && value != "fan_out")
      return Error::make(what + " must be fan_in or fan_out, got '" + value + "'");
    spec.words[arg->name] = value;
  } else {
    if (std::find(kNonlinearities.begin(), kNonlinearities.end(), value) == kNonlinearities.end())
      return Error::make(what +
                         " must be a nonlinearity torch.nn.init.calculate_gain knows "
                         "(linear, conv1d, conv2d, conv3d, sigmoid, tanh, relu, "
                         "leaky_relu, selu), got '" +
                         value + "'");
    spec.words[arg->name] = value;
  }
  return Error::success();
}

// Checks the values that each initializer constrains.
Error checkRanges(const InitSpec &s) {
  auto n = [&](const char *k) { return s.numbers.at(k); };
  if (s.numbers.count("std") && !(n("std") > 0))
    return Error::make("initializer '" + s.name + "' needs std > 0");
  if (s.numbers.count("gain") && !(n("gain") > 0))
    return Error::make("initializer '" + s.name + "' needs gain > 0");
  if (s.name == "embedding" &&
      (n("padding_idx") < -1 || n("padding_idx") != std::floor(n("padding_idx"))))
    return Error::make("initializer 'embedding' needs a whole padding_idx of -1 or more");
  if ((s.name == "uniform" || s.name == "trunc_normal") && !(n("a") < n("b")))
    return Error::make("initializer '" + s.name + "' needs a < b");
  return Error::success();
}

} // namespace

std::vector<std::string> initializerNames() {
  std::vector<std::string> names;
  for (const InitDef &d : defs()) names.push_back(d.name);
  return names;
}

Expected<InitSpec> parseInitSpec(const std::string &written) {
  std::string text = trim(written);
  size_t open = text.find('(');
  InitSpec spec;
  spec.name = trim(text.substr(0, open));
  const InitDef *d = findDef(spec.name);
  if (!d) {
    std::string msg = "unknown initializer '" + spec.name + "'";
    std::string hint = closestMatch(spec.name, initializerNames());
    if (!hint.empty()) msg += "; did you mean '" + hint + "'?";
    msg += " (known initializers:";
    for (const std::string &n : initializerNames()) msg += " " + n;
    return Error::make(msg + ")");
  }
  if (open != std::string::npos) {
    if (text.back() != ')') return Error::make("initializer '" + text + "' must end with ')'");
    std::string inner = trim(text.substr(open + 1, text.size() - open - 2));
    size_t positional = 0, start = 0;
    while (!inner.empty() && start <= inner.size()) {
      size_t comma = inner.find(',', start);
      std::string piece =
          inner.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      if (Error e = bindArg(*d, piece, positional, spec)) return e;
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  for (const InitArg &a : d->args) {
    if (a.kind == ArgKind::Number && !spec.numbers.count(a.name)) {
      if (!a.number)
        return Error::make("initializer '" + spec.name + "' needs argument '" + a.name + "'");
      spec.numbers[a.name] = *a.number;
    }
    if (a.kind != ArgKind::Number && !spec.words.count(a.name)) spec.words[a.name] = a.word;
  }
  if (Error e = checkRanges(spec)) return e;
  return spec;
}

std::string pytorchWeightInit() { return "kaiming_uniform(a=2.23606797749979)"; }

std::string pytorchBiasInit(int64_t weightFanIn) {
  char bound[32];
  std::snprintf(bound, sizeof bound, "%.9g",
                1 / std::sqrt(double(std::max<int64_t>(weightFanIn, 1))));
  return std::string("uniform(-") + bound + ", " + bound + ")";
}

Error registerInitDefaults() {
  if (Error e = registerSettingChoice(
          "init_defaults",
          {"dtnn", {}, "layers given no init= start from he_normal weights and zero biases", true},
          "dtnn"))
    return e;
  return registerSettingChoice("init_defaults",
                               {"pytorch",
                                {},
                                "torch.nn's defaults: conv2d and dense weights "
                                "kaiming_uniform(a=sqrt(5)), biases U(-1/sqrt(fan_in), "
                                "1/sqrt(fan_in))",
                                false},
                               "dtnn");
}

InitDraw InitSpec::draw(int64_t fanIn, int64_t fanOut) const {
  const InitDef &d = *findDef(name);
  auto n = [&](const char *k) { return numbers.at(k); };
  InitDraw r;
  double in = double(std::max<int64_t>(fanIn, 1)), out = double(std::max<int64_t>(fanOut, 1));
  double std = 0;
  switch (d.rule) {
  case Rule::Zeros:
    r.a = 0;
    return r;
  case Rule::Ones:
    r.a = 1;
    return r;
  case Rule::Constant:
    r.a = n("val");
    return r;
  case Rule::Uniform:
    r.kind = InitDraw::Uniform;
    r.a = n("a");
    r.b = n("b");
    return r;
  case Rule::Embedding:
    r.kind = InitDraw::Normal;
    r.zeroRow = int64_t(n("padding_idx"));
    return r;
  case Rule::Normal:
    r.kind = InitDraw::Normal;
    r.mean = n("mean");
    r.std = n("std");
    return r;
  case Rule::TruncNormal:
    r.kind = InitDraw::TruncatedNormal;
    r.mean = n("mean");
    r.std = n("std");
    r.a = n("a");
    r.b = n("b");
    return r;
  case Rule::Xavier:
    std = n("gain") * std::sqrt(2.0 / (in + out));
    break;
  case Rule::Kaiming: {
    double fan = words.at("mode") == "fan_out" ? out : in;
    std = gainOf(words.at("nonlinearity"), n("a")) / std::sqrt(fan);
    break;
  }
  case Rule::He:
    std = std::sqrt(2.0 / in);
    break;
  case Rule::Lecun:
    std = std::sqrt(1.0 / in);
    break;
  }
  if (d.normal) {
    r.kind = InitDraw::Normal;
    r.std = std;
  } else {
    r.kind = InitDraw::Uniform;
    r.b = std::sqrt(3.0) * std;
    r.a = -r.b;
  }
  return r;
}

} // namespace dtnn::ir
