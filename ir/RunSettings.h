// The settings of a training run (batch, epochs, data, optimizer, schedule,
// ...): one typed schema, shared by the three places settings come from — a
// `.dtnn` file's train section, a module's `train {...}` line in the IR text,
// and dtnn-run's command-line flags — and by everything that reads them.
//
// A module carries its settings flat (ir::Module::trainConfig): a number or a
// name per setting, and `key.arg` entries for the arguments of a setting that
// is a call (`optimizer = sgd(lr=0.1)` is `optimizer="sgd"`, `optimizer.lr=0.1`).
// The schema says what each key may hold; readRunSettings checks a whole map
// against it and gives the typed values that the passes and the runtime use.
// The front end checks each setting against the same schema to report an
// error at its source location.
//
// A setting that names a choice (an optimizer, a loss, a schedule, a data
// source, a metric) reads its choices, with their arguments and their kinds,
// from the registry of ir/SettingChoices.h, which the code implementing each
// choice fills (passes/Optimizers, runtime/train/Schedule,
// runtime/train/data/Sources). That code checks the meaning of the values: a
// gamma above zero, strictly increasing milestones.
#pragma once

#include "ir/Attributes.h"
#include "ir/Error.h"
#include "ir/SettingChoices.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dtnn::ir {

enum class SettingKind {
  Count,    // a whole number of at least `least`: batch = 64
  Fraction, // a number in [0, 1): validation = 0.1
  Rate,     // a finite number above zero: the learning rate, optimizer.lr
  Choice,   // a name, or a call with named arguments: schedule = step(step_size=30)
  Metrics,  // names of metrics: metrics = [accuracy, top5], carried as "accuracy,top5"
};

struct RunSettingDef {
  std::string key;       // "batch"; "optimizer.lr" for the learning rate
  SettingKind kind;
  std::string help;      // one line, for dtnn-run's help
  int64_t least = 0;     // Count: the least value
  std::string flag;      // dtnn-run's option for it, without "--"; "" when none
  std::string valueName; // the option's value in help: "N"
  std::string noun;      // Choice: what a choice is, for messages: "data source"
  ChoiceList choices;    // Choice: the registered choices, in message order
};

// A Choice setting's value: the choice and its arguments (key.arg entries).
struct SettingCall {
  std::string name;
  AttrMap args;
};

// The typed settings of a run, with the defaults of a setting neither the
// file nor a flag gives (a Choice setting's default is the choice registered
// as its default).
struct RunSettings {
  int64_t batch = 64;
  int64_t epochs = 1;
  uint64_t seed = 1;
  double lr = 0.01;              // optimizer.lr
  double validation = 0;         // fraction of the training set held out
  int64_t checkpointEvery = 0;   // epochs; 0: only at the end (with --save)
  SettingCall optimizer{defaultSettingChoice("optimizer"), {}};
  SettingCall loss{defaultSettingChoice("loss"), {}};
  SettingCall data{defaultSettingChoice("data"), {}};
  SettingCall augment{defaultSettingChoice("augment"), {}};
  SettingCall schedule{defaultSettingChoice("schedule"), {}};
  // Read by the compiler, which builds the layers (frontend/Frontend.cpp).
  SettingCall initDefaults{defaultSettingChoice("init_defaults"), {}};
  // f32, or bf16: the pipeline gains the mixed-precision pass (passes/Pipelines.h).
  SettingCall precision{defaultSettingChoice("precision"), {}};
  std::optional<AttrMap> earlyStopping; // the arguments of early_stopping(...)
  std::vector<std::string> metrics{defaultSettingChoice("metrics")}; // the default first, no repeats
};

// Every setting, train-section keys first in alphabetical order, then
// optimizer.lr (set as an argument of the optimizer, or by --lr).
const std::vector<RunSettingDef> &runSettingDefs();

// The keys a train section may set: the defs other than optimizer.lr.
std::vector<std::string> trainSectionKeys();

// The def of `key` ("batch", "optimizer.lr"), or null.
const RunSettingDef *findRunSetting(std::string_view key);

// What a value of `def` must be: "an integer of at least 1".
std::string settingExpectation(const RunSettingDef &def);

// Checks a value of a Count, Fraction, Rate or Metrics setting; a whole
// number given for a Fraction or a Rate becomes a float. Fails with messages
// such as "train setting 'batch' must be an integer of at least 1".
Error checkSettingValue(const RunSettingDef &def, AttrValue &value);

// Checks the choice `name` of a Choice setting; fails with "unknown schedule
// 'cosin'; did you mean 'cosine'? (known schedules: constant, cosine, ...)".
Error checkSettingChoice(const RunSettingDef &def, const std::string &name);

// Checks argument `arg` of choice `choice` (a known one) and makes its value
// of the declared kind; fails with "schedule 'step' has no argument 'gama'; did
// you mean 'gamma'? (arguments: step_size, gamma, warmup, warmup_start_factor)".
Error checkSettingArg(const RunSettingDef &def, const std::string &choice,
                      const std::string &arg, AttrValue &value);

// The same for every argument of `args`: the arguments, each of its declared kind, or the first
// failure.
Expected<AttrMap> checkSettingArgs(const RunSettingDef &def, const std::string &choice,
                                   const AttrMap &args);

// One name per registered metric, numbered ones with K = 5: "accuracy, top5".
std::string metricExamples();

// Checks one metric name: a registered metric, or for a numbered one (top)
// its name and K from 1 to 99999 (top5).
Error checkMetricName(const std::string &name);

// Checks every entry of a module's settings against the schema (unknown keys,
// kinds, ranges, choices and their arguments) and returns them typed.
Expected<RunSettings> readRunSettings(const AttrMap &config);

// The value of setting `def` in `s`, as a person reads it: "64", "0.1",
// "sgd(momentum=0.9)" (the learning rate is a setting of its own),
// "accuracy,top5".
std::string runSettingText(const RunSettings &s, const RunSettingDef &def);

// Sets the setting of `def` in `config` to `value` (a command-line override)
// after checking it. Choosing another choice drops the arguments given for
// the old one, except those with a def of their own (the learning rate).
// Fails with the message of the check.
Error setRunSetting(AttrMap &config, const RunSettingDef &def, AttrValue value);

// Registers the choices of the precision setting, f32 (the default) and bf16.
Error registerPrecisionChoices();

} // namespace dtnn::ir
