#include "backends/Backends.h"

#include "backends/reference/ReferenceBackend.h"
#include "ir/Diagnostics.h"

namespace dtnn::backends {

std::vector<std::string> backendNames() { return {"reference"}; }

Expected<std::unique_ptr<runtime::Backend>> createBackend(const std::string &name,
                                                          const runtime::BackendOptions &opts) {
  if (name == "reference") return reference::createReferenceBackend(opts);
  std::string list;
  for (const auto &n : backendNames()) list += (list.empty() ? "" : ", ") + n;
  std::string hint = closestMatch(name, backendNames());
  return Error::make("unknown backend '" + name + "'" +
               (hint.empty() ? "" : "; did you mean '" + hint + "'?") + " (known: " + list + ")");
}

} // namespace dtnn::backends
