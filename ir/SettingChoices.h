// The schema of the choices a run setting may name — optimizers, losses,
// schedules, data sources, early stopping, metrics — as an open registry
// this layer owns. Each choice is registered once, by the layer that
// implements it, together with its implementation (passes::registerOptimizer,
// train::registerDataSource, ...), so the run-settings schema
// (ir/RunSettings.h), did-you-mean suggestions and the printed schema read
// their names and arguments from here and no list of names is written twice.
#pragma once

#include "ir/Error.h"
#include "ir/Attributes.h"
#include "ir/Registry.h"

#include <string>
#include <vector>

namespace dtnn::ir {

// A named argument of a choice and the kind of its value.
struct ChoiceArg {
  std::string name;
  AttrKind kind;
};

// One choice of a setting: `step` of `schedule`, with its arguments.
struct SettingChoice {
  std::string name;
  std::vector<ChoiceArg> args;
  std::string summary; // one line, for the printed schema
  // The setting's value when neither a file nor a flag gives one; one per setting.
  bool isDefault = false;
  // Metrics only: the name is followed by a whole number K (top5 of `top`).
  bool numbered = false;
};

// Adds choice `c` to setting `setting` ("optimizer", "loss", "schedule",
// "data", "early_stopping", "metrics"); `origin` names the registrant.
// Fails when the setting takes no choices, the name is taken, or a second
// default is declared.
Error registerSettingChoice(const std::string &setting, SettingChoice c,
                            const std::string &origin);

// Registers an implementation that a run setting names: `entry` in `registry` under the
// choice's name, and `choice` as a choice of `setting`. Fails, with neither changed, when the
// name is taken in the registry; the registerX function of each layer checks the entry itself
// (that it implements something) first.
template <typename Entry>
Error registerChoiceEntry(Registry<Entry> &registry, const std::string &setting,
                          SettingChoice choice, Entry entry, const std::string &origin) {
  std::string name = choice.name;
  if (Error e = registry.checkFree(name, origin)) return e;
  if (Error e = registerSettingChoice(setting, std::move(choice), origin)) return e;
  return registry.add(name, origin, std::move(entry));
}

// The choices of `setting`, in registration order.
std::vector<SettingChoice> settingChoices(const std::string &setting);

// The default choice of `setting`, or "" when none is registered.
std::string defaultSettingChoice(const std::string &setting);

// Who registered choice `name` of `setting`, or "".
std::string settingChoiceOrigin(const std::string &setting, const std::string &name);

// The choices of one Choice setting, as RunSettingDef::choices() returns them.
struct ChoiceList {
  std::string setting;
  std::vector<SettingChoice> operator()() const { return settingChoices(setting); }
};

} // namespace dtnn::ir
