#include "runtime/train/Schedule.h"

#include "ir/Diagnostics.h"
#include "ir/Registry.h"
#include "ir/SettingChoices.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <functional>
#include <numbers>
#include <optional>

namespace dtnn::runtime {

using ir::AttrKind;
using ir::AttrValue;
using ir::formatDouble;

LrSchedule::~LrSchedule() = default;

namespace {

// Reads the named arguments of one schedule, keeping the first error so that
// a factory can read all of them and check once at the end.
class ArgReader {
public:
  ArgReader(std::string what, const ir::AttrMap &args) : what_(std::move(what)), args_(args) {}

  // Fails on any argument that the run-settings schema does not declare for `choice`.
  void checkNames(const std::string &setting, const std::string &choice) {
    for (const auto &[name, value] : args_.entries()) {
      AttrValue v = value;
      Error e = ir::checkSettingArg(*ir::findRunSetting(setting), choice, name, v);
      if (e && !error_) error_ = std::move(e); // the message names the choice
    }
  }
  double number(const std::string &name, std::optional<double> dflt) {
    auto v = get(name, AttrKind::Float, dflt.has_value(), "a number");
    double x = v ? std::get<double>(*v) : dflt.value_or(0.0);
    check(std::isfinite(x), name + " must be a finite number, got " + formatDouble(x));
    return x;
  }
  int64_t integer(const std::string &name, std::optional<int64_t> dflt) {
    auto v = get(name, AttrKind::Int, dflt.has_value(), "an integer");
    return v ? std::get<int64_t>(*v) : dflt.value_or(0);
  }
  bool boolean(const std::string &name, bool dflt) {
    auto v = get(name, AttrKind::Bool, true, "true or false");
    return v ? std::get<bool>(*v) : dflt;
  }
  std::vector<int64_t> integers(const std::string &name) {
    auto v = get(name, AttrKind::Ints, false, "a list of integers");
    return v ? std::get<std::vector<int64_t>>(*v) : std::vector<int64_t>{};
  }
  // Fails with `msg` unless `ok`.
  void check(bool ok, const std::string &msg) {
    if (!ok) fail(msg);
  }
  Error takeError() { return std::move(error_); }
  bool failed() const { return static_cast<bool>(error_); }

private:
  std::optional<AttrValue> get(const std::string &name, AttrKind kind, bool optional,
                               const char *kindText) {
    const AttrValue *v = args_.find(name);
    if (!v) {
      check(optional, "missing required argument '" + name + "'");
      return std::nullopt;
    }
    std::optional<AttrValue> c = ir::coerceAttr(*v, kind);
    check(c.has_value(), name + " must be " + kindText + ", got " + ir::attrValueStr(*v));
    return c;
  }
  void fail(const std::string &msg) {
    if (!error_) error_ = Error::make(what_.empty() ? msg : what_ + ": " + msg);
  }
  std::string what_;
  const ir::AttrMap &args_;
  Error error_;
};

// A schedule whose rate depends on the epoch alone.
class EpochSchedule : public LrSchedule {
public:
  explicit EpochSchedule(std::function<double(int64_t)> fn) : fn_(std::move(fn)) {}
  double lr(int64_t epoch, int64_t, int64_t) const override {
    return fn_(std::max<int64_t>(epoch, 0));
  }

private:
  std::function<double(int64_t)> fn_;
};

// A schedule whose rate follows the fraction of epochs done, step by step: epoch e's step s of
// n is at e + s / n.
class ProgressSchedule : public LrSchedule {
public:
  explicit ProgressSchedule(std::function<double(double)> fn) : fn_(std::move(fn)) {}
  double lr(int64_t epoch, int64_t step, int64_t stepsPerEpoch) const override {
    double within = double(std::max<int64_t>(step, 0)) / double(std::max<int64_t>(stepsPerEpoch, 1));
    return fn_(double(std::max<int64_t>(epoch, 0)) + within);
  }

private:
  std::function<double(double)> fn_;
};

std::optional<double> parseDouble(const std::string &s) {
  double v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<int64_t> parseInt(const std::string &s) {
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

// Looks up `key` in a checkpoint state and parses it with `parse`.
template <typename T, typename Parse>
Error readKey(const char *what, const std::map<std::string, std::string> &state,
              const std::string &key, Parse parse, T &out) {
  auto it = state.find(key);
  if (it == state.end())
    return Error::make(std::string(what) + " state: missing key '" + key + "'");
  std::optional<T> v = parse(it->second);
  if (!v)
    return Error::make(std::string(what) + " state: bad value '" + it->second + "' for key '" +
                       key + "'");
  out = *v;
  return Error::success();
}

// ReduceLROnPlateau in mode 'min' with a relative threshold and no cooldown.
class PlateauSchedule : public LrSchedule {
public:
  PlateauSchedule(double baseLr, double factor, int64_t patience, double threshold, double minLr)
      : lr_(baseLr), factor_(factor), patience_(patience), threshold_(threshold), minLr_(minLr) {}

  double lr(int64_t, int64_t, int64_t) const override { return lr_; }
  void endEpoch(int64_t, double loss) override {
    if (loss < best_ * (1.0 - threshold_)) {
      best_ = loss;
      bad_ = 0;
    } else {
      ++bad_;
    }
    if (bad_ > patience_) {
      double reduced = std::max(lr_ * factor_, minLr_);
      // PyTorch skips reductions smaller than its eps of 1e-8.
      if (lr_ - reduced > 1e-8) lr_ = reduced;
      bad_ = 0;
    }
  }
  std::map<std::string, std::string> state() const override {
    return {
        {"lr", formatDouble(lr_)}, {"best", formatDouble(best_)}, {"bad", std::to_string(bad_)}};
  }
  Error restore(const std::map<std::string, std::string> &s) override {
    double lr = 0, best = 0;
    int64_t bad = 0;
    if (Error e = readKey("reduce_on_plateau", s, "lr", parseDouble, lr)) return e;
    if (Error e = readKey("reduce_on_plateau", s, "best", parseDouble, best)) return e;
    if (Error e = readKey("reduce_on_plateau", s, "bad", parseInt, bad)) return e;
    lr_ = lr;
    best_ = best;
    bad_ = bad;
    return Error::success();
  }

private:
  double lr_, factor_;
  int64_t patience_;
  double threshold_, minLr_;
  double best_ = std::numeric_limits<double>::infinity();
  int64_t bad_ = 0;
};

// Linear per-step warm-up over `epochs` epochs, then `inner` with its epochs
// counted from the end of the warm-up.
class WarmupSchedule : public LrSchedule {
public:
  WarmupSchedule(std::unique_ptr<LrSchedule> inner, double baseLr, int64_t epochs,
                 double startFactor)
      : inner_(std::move(inner)), baseLr_(baseLr), epochs_(epochs), startFactor_(startFactor) {}

  double lr(int64_t epoch, int64_t step, int64_t stepsPerEpoch) const override {
    if (epoch >= epochs_) return inner_->lr(epoch - epochs_, step, stepsPerEpoch);
    int64_t perEpoch = std::max<int64_t>(stepsPerEpoch, 1);
    double done = double(std::max<int64_t>(epoch, 0) * perEpoch + std::max<int64_t>(step, 0));
    double t = std::min(done / double(epochs_ * perEpoch), 1.0);
    return baseLr_ * (startFactor_ + (1.0 - startFactor_) * t);
  }
  void endEpoch(int64_t epoch, double loss) override {
    if (epoch >= epochs_) inner_->endEpoch(epoch - epochs_, loss);
  }
  std::map<std::string, std::string> state() const override { return inner_->state(); }
  Error restore(const std::map<std::string, std::string> &s) override { return inner_->restore(s); }

private:
  std::unique_ptr<LrSchedule> inner_;
  double baseLr_;
  int64_t epochs_;
  double startFactor_;
};

using Built = std::unique_ptr<LrSchedule>;

Built constant(double base) {
  return std::make_unique<EpochSchedule>([base](int64_t) { return base; });
}

// A built-in schedule's builder: reads its arguments through an ArgReader,
// which keeps the first error.
using ReaderBuild = Built (*)(ArgReader &r, double base, int64_t epochs);

ScheduleBuilder withReader(ReaderBuild build) {
  return [build](const ir::AttrMap &args, double base, int64_t epochs) -> Expected<Built> {
    ArgReader r("", args);
    Built s = build(r, base, epochs);
    if (r.failed()) return r.takeError();
    return Expected<Built>(std::move(s));
  };
}

ir::Registry<ScheduleDef> &registry() {
  static ir::Registry<ScheduleDef> schedules("schedule");
  return schedules;
}

} // namespace

Error registerSchedule(ScheduleDef def, const std::string &origin) {
  if (!def.build) return Error::make("schedule '" + def.name + "' of " + origin + " builds nothing");
  ir::SettingChoice choice{def.name, def.args, def.summary, def.isDefault};
  choice.args.push_back({def.warmupArg, AttrKind::Int});
  choice.args.push_back({def.warmupFactorArg, AttrKind::Float});
  return ir::registerChoiceEntry(registry(), "schedule", std::move(choice), std::move(def), origin);
}

Error registerBuiltinSchedules() {
  static bool done = false;
  if (done) return Error::success();
  done = true;
  using K = AttrKind;
  std::vector<ScheduleDef> all = {
      {"constant", {}, "a constant rate",
       withReader([](ArgReader &, double base, int64_t) { return constant(base); }),
       true},
      {"cosine", {{"t_max", K::Int}, {"eta_min", K::Float}, {"per_step", K::Bool}},
       "cosine annealing to eta_min, each epoch or (per_step) each step",
       withReader([](ArgReader &r, double base, int64_t epochs) -> Built {
         int64_t tMax = r.integer("t_max", std::max<int64_t>(epochs, 1));
         double etaMin = r.number("eta_min", 0.0);
         bool perStep = r.boolean("per_step", false);
         r.check(tMax >= 1, "t_max must be at least 1, got " + std::to_string(tMax));
         r.check(etaMin >= 0, "eta_min must be >= 0, got " + formatDouble(etaMin));
         auto rate = [=](double e) {
           double c = std::cos(std::numbers::pi * e / double(tMax));
           return etaMin + (base - etaMin) * (1.0 + c) / 2.0;
         };
         if (perStep) return std::make_unique<ProgressSchedule>(rate);
         return std::make_unique<EpochSchedule>([=](int64_t e) { return rate(double(e)); });
       })},
      {"exponential", {{"gamma", K::Float}}, "multiply by gamma every epoch",
       withReader([](ArgReader &r, double base, int64_t) -> Built {
         double gamma = r.number("gamma", std::nullopt);
         r.check(gamma > 0, "gamma must be > 0, got " + formatDouble(gamma));
         return std::make_unique<EpochSchedule>(
             [=](int64_t e) { return base * std::pow(gamma, double(e)); });
       })},
      {"multistep", {{"milestones", K::Ints}, {"gamma", K::Float}},
       "multiply by gamma at each milestone epoch",
       withReader([](ArgReader &r, double base, int64_t) -> Built {
         std::vector<int64_t> ms = r.integers("milestones");
         double gamma = r.number("gamma", 0.1);
         r.check(gamma > 0, "gamma must be > 0, got " + formatDouble(gamma));
         for (size_t i = 0; i < ms.size(); ++i) {
           r.check(ms[i] >= 1, "milestones must be at least 1, got " + std::to_string(ms[i]));
           r.check(i == 0 || ms[i] > ms[i - 1], "milestones must be strictly increasing");
         }
         return std::make_unique<EpochSchedule>([=](int64_t e) {
           auto passed = std::upper_bound(ms.begin(), ms.end(), e) - ms.begin();
           return base * std::pow(gamma, double(passed));
         });
       })},
      {"reduce_on_plateau",
       {{"factor", K::Float}, {"patience", K::Int}, {"threshold", K::Float}, {"min_lr", K::Float}},
       "multiply by factor when the validation loss stops improving",
       withReader([](ArgReader &r, double base, int64_t) -> Built {
         double factor = r.number("factor", 0.1);
         int64_t patience = r.integer("patience", 10);
         double threshold = r.number("threshold", 1e-4);
         double minLr = r.number("min_lr", 0.0);
         r.check(factor > 0 && factor < 1, "factor must be in (0, 1), got " + formatDouble(factor));
         r.check(patience >= 0, "patience must be >= 0, got " + std::to_string(patience));
         r.check(threshold >= 0, "threshold must be >= 0, got " + formatDouble(threshold));
         r.check(minLr >= 0, "min_lr must be >= 0, got " + formatDouble(minLr));
         return std::make_unique<PlateauSchedule>(base, factor, patience, threshold, minLr);
       })},
      {"step", {{"step_size", K::Int}, {"gamma", K::Float}},
       "multiply by gamma every step_size epochs",
       withReader([](ArgReader &r, double base, int64_t) -> Built {
         int64_t stepSize = r.integer("step_size", std::nullopt);
         double gamma = r.number("gamma", 0.1);
         r.check(stepSize >= 1, "step_size must be at least 1, got " + std::to_string(stepSize));
         r.check(gamma > 0, "gamma must be > 0, got " + formatDouble(gamma));
         return std::make_unique<EpochSchedule>(
             [=](int64_t e) { return base * std::pow(gamma, double(e / stepSize)); });
       })},
      // A linear warm-up alone, then a constant rate; makeSchedule reads its arguments.
      {"warmup", {}, "a linear warm-up over `epochs` epochs, then a constant rate",
       withReader([](ArgReader &, double base, int64_t) { return constant(base); }),
       false, "epochs", "start_factor", 5},
  };
  for (ScheduleDef &d : all)
    if (Error e = registerSchedule(std::move(d), ir::kBuiltinOrigin)) return e;
  // Early stopping is a setting of its own with one choice, read by makeEarlyStopping.
  return ir::registerSettingChoice(
      "early_stopping",
      {"early_stopping", {{"patience", AttrKind::Int}, {"min_delta", AttrKind::Float}},
       "stop when the validation loss stops improving"},
      ir::kBuiltinOrigin);
}

std::vector<std::string> scheduleNames() { return registry().names(); }

Expected<std::unique_ptr<LrSchedule>> makeSchedule(const ScheduleSpec &spec, double baseLr,
                                                   int64_t totalEpochs) {
  std::string name = spec.name.empty() ? ir::defaultSettingChoice("schedule") : spec.name;
  const ScheduleDef *kind = registry().find(name);
  if (!kind) {
    Error e = ir::checkSettingChoice(*ir::findRunSetting("schedule"), name);
    return e ? std::move(e) : Error::make("schedule '" + name + "' has no builder");
  }
  ArgReader r("schedule '" + name + "'", spec.args);
  r.check(std::isfinite(baseLr) && baseLr >= 0,
          "the base learning rate must be a finite number >= 0, got " + formatDouble(baseLr));
  r.checkNames("schedule", name);
  const std::string &epochsArg = kind->warmupArg, &factorArg = kind->warmupFactorArg;
  int64_t warmup = r.integer(epochsArg, kind->defaultWarmup);
  double startFactor = r.number(factorArg, 0.1);
  r.check(warmup >= 0, epochsArg + " must be >= 0, got " + std::to_string(warmup));
  r.check(startFactor > 0 && startFactor <= 1,
          factorArg + " must be in (0, 1], got " + formatDouble(startFactor));
  if (r.failed()) return r.takeError();
  // The schedule's own arguments: the warm-up's are read above.
  ir::AttrMap own;
  for (const auto &[k, v] : spec.args.entries())
    if (k != epochsArg && k != factorArg) own.set(k, v);
  Expected<Built> inner = kind->build(own, baseLr, totalEpochs - std::max<int64_t>(warmup, 0));
  if (!inner) return Error::make("schedule '" + name + "': " + inner.error().message());
  Built s = std::move(*inner);
  if (warmup > 0)
    s = std::make_unique<WarmupSchedule>(std::move(s), baseLr, warmup, startFactor);
  return Expected<Built>(std::move(s));
}

bool EarlyStopping::update(double loss) {
  if (loss < best - minDelta) {
    best = loss;
    bad = 0;
    return false;
  }
  return ++bad >= patience;
}

std::map<std::string, std::string> EarlyStopping::state() const {
  return {{"best", formatDouble(best)}, {"bad", std::to_string(bad)}};
}

Error EarlyStopping::restore(const std::map<std::string, std::string> &s) {
  double b = 0;
  int64_t n = 0;
  if (Error e = readKey("early_stopping", s, "best", parseDouble, b)) return e;
  if (Error e = readKey("early_stopping", s, "bad", parseInt, n)) return e;
  best = b;
  bad = n;
  return Error::success();
}

Expected<EarlyStopping> makeEarlyStopping(const ir::AttrMap &args) {
  ArgReader r("early_stopping", args);
  r.checkNames("early_stopping", "early_stopping");
  EarlyStopping es;
  es.patience = r.integer("patience", 5);
  es.minDelta = r.number("min_delta", 0.0);
  r.check(es.patience >= 0, "patience must be >= 0, got " + std::to_string(es.patience));
  r.check(es.minDelta >= 0, "min_delta must be >= 0, got " + formatDouble(es.minDelta));
  if (r.failed()) return r.takeError();
  return es;
}

} // namespace dtnn::runtime
