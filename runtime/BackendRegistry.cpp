#include "runtime/BackendRegistry.h"

#include "ir/Diagnostics.h"
#include "ir/Registry.h"
#include "runtime/Threads.h"

#include <algorithm>

namespace dtnn::runtime {

BackendRegistry &BackendRegistry::get() {
  static BackendRegistry registry;
  return registry;
}

Error BackendRegistry::add(BackendEntry e) {
  if (const BackendEntry *old = find(e.name))
    return Error::make(ir::duplicateMessage("backend", e.name, old->origin, e.origin));
  if (!e.create) return Error::make("backend '" + e.name + "' of " + e.origin + " creates nothing");
  entries_.push_back(std::move(e));
  std::sort(entries_.begin(), entries_.end(), [](const BackendEntry &a, const BackendEntry &b) {
    return a.priority != b.priority ? a.priority > b.priority : a.name < b.name;
  });
  return Error::success();
}

Error registerBackend(BackendEntry e) { return BackendRegistry::get().add(std::move(e)); }

Expected<BufferDesc> layoutLike(const BufferDesc &like, const ir::TensorType &type) {
  if (like.layout.isPlain()) return BufferDesc::plain(type);
  const BackendEntry *owner = BackendRegistry::get().find(like.layout.backend());
  if (!owner || !owner->layoutLike)
    return Error::make("the " + like.layout.backend() + " backend cannot arrange " + type.str() +
                       " as " + like.layout.tag());
  return owner->layoutLike(like, type);
}

std::vector<std::string> BackendRegistry::names() const {
  std::vector<std::string> out;
  for (const BackendEntry &e : entries_) out.push_back(e.name);
  return out;
}

const BackendEntry *BackendRegistry::find(const std::string &name) const {
  for (const BackendEntry &e : entries_)
    if (e.name == name) return &e;
  return nullptr;
}

Error BackendSet::checkName(const std::string &name) {
  std::vector<std::string> names = BackendRegistry::get().names();
  if (names.empty()) return Error::make("this build has no backends");
  if (name.empty() || name == "auto" || BackendRegistry::get().find(name)) return Error::success();
  std::string list;
  for (const auto &n : names) list += (list.empty() ? "" : ", ") + n;
  std::string hint = closestMatch(name, names);
  return Error::make("unknown backend '" + name + "'" +
                     (hint.empty() ? "" : "; did you mean '" + hint + "'?") + " (known: " +
                     list + ")");
}

Expected<std::vector<std::string>> BackendSet::order(const std::string &name) {
  if (Error e = checkName(name)) return e;
  const BackendRegistry &reg = BackendRegistry::get();
  std::vector<std::string> names = reg.names();
  std::string chosen = name.empty() ? names.front() : name;
  if (name == "auto") {
    chosen = names.front();
    for (const std::string &n : names)
      if (const BackendEntry *e = reg.find(n); e->available && e->available()) {
        chosen = n;
        break;
      }
  }
  std::vector<std::string> out = {chosen};
  for (const std::string &n : names)
    if (n != chosen && reg.find(n)->fallback) out.push_back(n);
  return out;
}

Expected<BackendSet> BackendSet::create(const std::string &name, const BackendOptions &opts) {
  auto names = order(name);
  if (!names) return names.takeError();
  setThreadCount(opts.threads > 0 ? opts.threads : defaultThreadCount());
  BackendSet set;
  for (const std::string &n : *names) set.all_.push_back(BackendRegistry::get().find(n)->create(opts));
  if (!opts.planOnly)
    for (const auto &b : set.all_)
      if (Error e = b->start())
        return Error::make("the " + std::string(b->name()) + " backend cannot run here: " + e.message());
  return set;
}

Backend *BackendSet::owner(MemorySpace s) const {
  for (const auto &b : all_)
    if (b->memorySpace() == s) return b.get();
  return nullptr;
}

Backend *BackendSet::find(std::string_view name) const {
  for (const auto &b : all_)
    if (b->name() == name) return b.get();
  return nullptr;
}

std::string BackendSet::namesText() const {
  std::string s;
  for (const auto &b : all_) s += (s.empty() ? "" : ", ") + std::string(b->name());
  return s;
}

} // namespace dtnn::runtime
