// Name resolution over every block and model of the loaded files, before
// any expansion: each called or referenced name must be a local binding, a
// block, a built-in layer or a builtin function. This finds typos in blocks
// that no model uses yet.
#pragma once

#include "frontend/Elaborator.h"

namespace dtnn::frontend {

// Reports each unresolved name once, with "did you mean"; returns false if any.
bool resolveNames(const Program &program, DiagnosticEngine &diags);

// The kinds a block parameter may be annotated with.
const std::vector<std::string> &blockParamKinds();

// The builtin functions of the language.
const std::vector<std::string> &builtinFunctionNames();

} // namespace dtnn::frontend
