// Compiling a model from a program: .dtnn text or a file to the IR text that `dtnnc compile`
// prints, through the same front end and pass pipelines.
#pragma once

#include "dtnn/Error.h"

#include <string>
#include <vector>

namespace dtnn {

// What to compile and how.
struct CompileRequest {
  // The model to build; empty: the only model the file defines.
  std::string model;
  // Folders searched by `import` after the importing file's own folder and before the
  // standard library.
  std::vector<std::string> importDirs;
  // The passes to run, as `--passes=` takes them: a pipeline name ("default", "train", ...)
  // or a comma-separated list of passes; empty runs none.
  std::string passes = "default";
};

// The folder that `import "std/..."` finds the standard library of blocks in: beside an
// installed libdtnn, or in the source tree it was built from.
std::string standardLibraryDir();

// Compiles .dtnn source text, named `name` in diagnostics and for relative imports, and
// returns the module's IR text; diagnostics (`file:line:col: error: ...` with the line and a
// caret) are the error's message.
Expected<std::string> compileSource(const std::string &name, const std::string &text,
                                    const CompileRequest &request);

// Compiles the .dtnn file at `path`, as compileSource does.
Expected<std::string> compileFile(const std::string &path, const CompileRequest &request);

} // namespace dtnn
