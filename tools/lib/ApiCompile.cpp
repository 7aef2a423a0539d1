// The compile calls of dtnn/Compiler.h: the front end, then the passes that `dtnnc compile
// --passes=` would run, then the IR printer.
#include "dtnn/Compiler.h"
#include "dtnn/Registry.h"

#include "frontend/Frontend.h"
#include "ir/Printer.h"
#include "passes/PassManager.h"
#include "runtime/train/FusionTargets.h"

#include <sstream>

namespace dtnn {

namespace {

frontend::CompileOptions frontendOptions(const CompileRequest &r) {
  frontend::CompileOptions o;
  o.modelName = r.model;
  o.importDirs = r.importDirs;
  o.importDirs.push_back(standardLibraryDir());
  return o;
}

// Runs the request's passes over a module the front end built, and prints it.
Expected<std::string> finish(std::unique_ptr<ir::Module> m, const std::string &diagnostics,
                             const CompileRequest &r) {
  if (!m) return Error::make(diagnostics);
  auto target = runtime::makeFusionTarget("");
  if (!target) return target.takeError();
  passes::PassManagerOptions o;
  o.target = target->get();
  std::ostringstream dumps;
  o.irOut = &dumps;
  passes::PassManager pm(o);
  if (Error e = pm.parsePipeline(r.passes)) return e;
  if (Error e = pm.run(*m)) return e;
  return ir::printModule(*m);
}

} // namespace

Expected<std::string> compileSource(const std::string &name, const std::string &text,
                                    const CompileRequest &request) {
  if (Error e = registerBuiltins()) return e;
  SourceManager sm;
  std::ostringstream diagnostics;
  DiagnosticEngine diags(sm, diagnostics);
  auto m = frontend::compileSource(name, text, frontendOptions(request), sm, diags);
  return finish(std::move(m), diagnostics.str(), request);
}

Expected<std::string> compileFile(const std::string &path, const CompileRequest &request) {
  if (Error e = registerBuiltins()) return e;
  SourceManager sm;
  std::ostringstream diagnostics;
  DiagnosticEngine diags(sm, diagnostics);
  auto m = frontend::compileFile(path, frontendOptions(request), sm, diags);
  return finish(std::move(m), diagnostics.str(), request);
}

} // namespace dtnn
