// The textual IR's fuzz entry point. It parses arbitrary bytes as a .dtir
// module and checks the invariants that must hold for every input: no crash;
// a parse that fails reports an error; a module that parses and verifies
// prints text that parses back to the same text; and every pass of the
// compile and train pipelines either reports an error or leaves a module
// that verifies and survives the same round trip.
#include "ir/Printer.h"
#include "ir/TextParser.h"
#include "ir/Verifier.h"
#include "passes/PassManager.h"
#include "passes/Pipelines.h"
#include "test/fuzz/FuzzSupport.h"

#include <cstdint>
#include <ostream>
#include <string>

namespace {

using dtnn::fuzz::checkRoundTrip;
using dtnn::fuzz::fail;

// Runs `pass` alone on `m`; a failure must say why, a success must leave a valid module.
void runPass(const std::string &pass, dtnn::ir::Module &m, std::ostream &sink) {
  dtnn::passes::PassManagerOptions o;
  o.irOut = &sink;
  o.timingOut = &sink;
  dtnn::passes::PassManager pm(o);
  if (dtnn::Error e = pm.parsePipeline(pass)) fail("a pipeline pass name does not parse");
  if (dtnn::Error e = pm.run(m)) {
    if (e.message().empty()) fail("a pass failed without a message");
    return;
  }
  if (!dtnn::ir::verifyModule(m).empty()) fail("a pass left a module that does not verify");
  checkRoundTrip(m, sink);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  dtnn::fuzz::QuietDiagnostics quiet;
  auto &[buffer, sink, sm, diags] = quiet;
  std::string text(reinterpret_cast<const char *>(data), size);
  auto module = dtnn::ir::parseModule(text, "fuzz.dtir", sm, diags);
  if (!module) {
    if (!diags.hasErrors()) fail("the parser failed without reporting an error");
    return 0;
  }
  if (!dtnn::ir::verifyModule(*module).empty()) return 0;
  checkRoundTrip(*module, sink);
  // Each pass of both pipelines, in order, on one module: later passes see earlier passes' output.
  for (const char *name : {"default", "train"}) {
    auto copy = dtnn::ir::parseModule(dtnn::ir::printModule(*module), "fuzz.dtir", sm, diags);
    if (!copy) fail("the printed module does not parse");
    for (const std::string &pass : dtnn::passes::findPipeline(name)->passes) runPass(pass, *copy, sink);
  }
  return 0;
}
