#include "ir/SettingChoices.h"

#include "ir/Registry.h"
#include "ir/RunSettings.h"

#include <map>

namespace dtnn::ir {

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
