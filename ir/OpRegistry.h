// Registration into the op table (ir/OpTable.h): the call an extension
// makes, and the registration of the built-in op families.
#pragma once

#include "ir/Error.h"
#include "ir/OpDef.h"

#include <string>

namespace dtnn::ir {

// Adds `def` to the process-wide op table; `origin` names the registrant in
// messages. Fails when the name is taken or the entry lacks a shape rule.
Error registerOp(OpDef def, const std::string &origin);

// Registers every built-in op (once; later calls do nothing).
Error registerBuiltinOps();

} // namespace dtnn::ir
