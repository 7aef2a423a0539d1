// Lookup of passes by name. The set of passes is the list in
// passes/Passes.def; each pass file provides a create<ClassName>() factory.
#pragma once

#include "passes/Pass.h"

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace dtnn::passes {

// The factory of each pass in passes/Passes.def, e.g. createDeadCodeElimPass().
#define DTNN_PASS(Class, Name) std::unique_ptr<Pass> create##Class();
#include "passes/Passes.def"

// A new instance of the pass called `name`, or null if there is none.
std::unique_ptr<Pass> createPass(std::string_view name);

// The names of all registered passes, sorted.
std::vector<std::string> passNames();

} // namespace dtnn::passes
