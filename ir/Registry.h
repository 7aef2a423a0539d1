// An open registry of named entries of one kind (ops, passes, optimizers,
// ...), the building block of every extension point. Each entry carries the
// name of whoever registered it (its origin: "built-in", or a library's
// name), so that registering a name twice fails with a message naming both
// registrants. Entries keep their registration order; names() sorts.
#pragma once

#include "ir/Error.h"

#include <algorithm>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace dtnn::ir {

// The origin of the entries dtnn itself registers.
inline constexpr const char *kBuiltinOrigin = "built-in";

// The message for registering `name` of kind `kind` a second time.
inline std::string duplicateMessage(const std::string &kind, const std::string &name,
                                    const std::string &oldOrigin, const std::string &newOrigin) {
  return kind + " '" + name + "' is already registered (by " + oldOrigin + "); " + newOrigin +
         " cannot register it again";
}

template <typename Entry> class Registry {
public:
  // `kind` names an entry in messages: "op", "pass", "data source".
  explicit Registry(std::string kind) : kind_(std::move(kind)) {}

  // Fails if `name` is taken, with a message naming its registrant and `origin`.
  Error checkFree(const std::string &name, const std::string &origin) const {
    if (const Slot *old = slot(name))
      return Error::make(duplicateMessage(kind_, name, old->origin, origin));
    return Error::success();
  }
  // Adds `entry` under `name`; fails if the name is taken.
  Error add(const std::string &name, const std::string &origin, Entry entry) {
    if (Error e = checkFree(name, origin)) return e;
    slots_.push_back(std::make_unique<Slot>(Slot{name, origin, std::move(entry)}));
    return Error::success();
  }
  // The entry called `name`, or null.
  const Entry *find(std::string_view name) const {
    const Slot *s = slot(name);
    return s ? &s->entry : nullptr;
  }
  // Who registered `name` ("" when nobody did).
  std::string origin(std::string_view name) const {
    const Slot *s = slot(name);
    return s ? s->origin : "";
  }
  // The names, in registration order.
  std::vector<std::string> namesInOrder() const {
    std::vector<std::string> out;
    for (const auto &s : slots_) out.push_back(s->name);
    return out;
  }
  // The names, sorted.
  std::vector<std::string> names() const {
    std::vector<std::string> out = namesInOrder();
    std::sort(out.begin(), out.end());
    return out;
  }
  // The entries, in registration order.
  std::vector<const Entry *> entries() const {
    std::vector<const Entry *> out;
    for (const auto &s : slots_) out.push_back(&s->entry);
    return out;
  }

private:
  struct Slot {
    std::string name, origin;
    Entry entry;
  };
  const Slot *slot(std::string_view name) const {
    for (const auto &s : slots_)
      if (s->name == name) return s.get();
    return nullptr;
  }

  std::string kind_;
  std::vector<std::unique_ptr<Slot>> slots_;
};

} // namespace dtnn::ir
