// Parser for the textual IR (the printer's output, and hand-written .dtir
// files in tests). Errors are reported to the diagnostic engine with the
// position in the text.
#pragma once

#include "ir/IR.h"

#include <memory>
#include <string>

namespace dtnn::ir {

// Parses `text` after registering it in `sm` under `filename`, so that
// diagnostics can show the offending line; `diags` must be built on `sm`.
// Returns null after reporting at least one error. When `positions` is
// given it receives where each op, parameter and graph was read, for the
// verifier's messages.
std::unique_ptr<Module> parseModule(const std::string &text, const std::string &filename,
                                    SourceManager &sm, DiagnosticEngine &diags,
                                    TextPositions *positions = nullptr);

} // namespace dtnn::ir
