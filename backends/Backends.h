// The backends this build includes, by name: `dtnn-run --backend NAME`.
#pragma once

#include "ir/Error.h"
#include "runtime/Backend.h"

#include <memory>
#include <string>
#include <vector>

namespace dtnn::backends {

// Names of the backends compiled in, the default first.
std::vector<std::string> backendNames();

// Creates a backend; an unknown name gets an error listing the known ones.
Expected<std::unique_ptr<runtime::Backend>> createBackend(const std::string &name,
                                                          const runtime::BackendOptions &opts);

} // namespace dtnn::backends
