// Parsing one .dtnn file into an AST: byte-level checks (NUL, invalid
// UTF-8), lexing and nesting-depth limits, the ANTLR parse with compiler-
// style syntax errors, and the parse tree to AST conversion.
#pragma once

#include "frontend/AST.h"
#include "ir/SourceFile.h"

#include <memory>
#include <string>

namespace dtnn::frontend {

// Limits that keep hostile input from exhausting the stack.
constexpr unsigned kMaxNesting = 256;    // brackets, braces, parentheses
constexpr unsigned kMaxExprDepth = 1000; // operator chains in one expression
constexpr size_t kMaxFileBytes = kMaxSourceBytes; // what readSourceFile reads at most
constexpr size_t kMaxTokens = 1'000'000;   // bounds parse time and memory

// Parses `text`, already registered in the source manager under `name`.
// Returns null after reporting errors.
std::unique_ptr<FileAst> parseSource(const std::string &name, const std::string &text,
                                     DiagnosticEngine &diags);

} // namespace dtnn::frontend
