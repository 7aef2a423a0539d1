// The front end's entry points: read a .dtnn file (and its imports), parse it
// with the ANTLR grammar, resolve names, expand blocks and loops, check every
// type and shape, and build the graph IR of one model.
#pragma once

#include "ir/Diagnostics.h"
#include "ir/IR.h"

#include <cstddef>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

namespace dtnn::frontend {

// The most files one compilation loads: the main file and every file it
// imports, directly or not. The scopes of blocks take memory quadratic in the
// number of files (a bit per pair, 12.5 MB at the limit), so a bound keeps
// both time and memory small.
constexpr size_t kMaxLoadedFiles = 10'000;

struct CompileOptions {
  // The model to build; empty means the only model the main file defines.
  std::string modelName;
  // Folders searched by `import` after the importing file's own folder.
  std::vector<std::string> importDirs;
};

// Compiles `path` into a module holding the model's forward graph and its
// parameters. Returns null after reporting errors to `diags`.
std::unique_ptr<ir::Module> compileFile(const std::string &path, const CompileOptions &opts,
                                        SourceManager &sm, DiagnosticEngine &diags);

// Same, for text that does not come from a file (fuzzing, tests); `name` is
// the file name used in diagnostics and for resolving relative imports.
std::unique_ptr<ir::Module> compileSource(const std::string &name, std::string text,
                                          const CompileOptions &opts, SourceManager &sm,
                                          DiagnosticEngine &diags);

// Prints the AST of `path` (after parsing, before elaboration), for --emit=ast.
// Returns false after reporting errors.
bool dumpAst(const std::string &path, const CompileOptions &opts, SourceManager &sm,
             DiagnosticEngine &diags, std::ostream &os);

} // namespace dtnn::frontend
