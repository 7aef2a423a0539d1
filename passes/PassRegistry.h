// The pass registry, open to extensions: registerPass adds a pass by its
// factory (the pass's own name() is its key, so the name is written once, in
// the pass), and pipelines (passes/Pipelines.cpp, --passes=) refer to passes
// by name. The built-in passes register from registerBuiltinPasses().
#pragma once

#include "ir/Error.h"
#include "passes/Pass.h"

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace dtnn::passes {

// Makes a new instance of one pass, with its options unset.
using PassFactory = std::function<std::unique_ptr<Pass>()>;

// Registers the pass `create` makes, under its name(); `origin` names the
// registrant in messages. Fails when the name is taken or is not kebab-case.
Error registerPass(PassFactory create, const std::string &origin);

// Registers the built-in passes (once; later calls do nothing).
Error registerBuiltinPasses();

// A new instance of the pass called `name`, or null if there is none.
std::unique_ptr<Pass> createPass(std::string_view name);

// The names of all registered passes, sorted.
std::vector<std::string> passNames();

// Who registered pass `name` ("built-in", a library's name), or "".
std::string passOrigin(std::string_view name);

} // namespace dtnn::passes
