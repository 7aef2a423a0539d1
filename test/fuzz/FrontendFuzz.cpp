// The front end's fuzz entry point. It compiles arbitrary bytes as a .dtnn
// file and checks the invariants that must hold for every input: no crash,
// and for every model that compiles, a module that verifies and whose text
// form parses back to the same text.
#include "frontend/Frontend.h"
#include "ir/Verifier.h"
#include "test/fuzz/FuzzSupport.h"

#include <cstdint>
#include <ostream>
#include <string>

namespace {

// Checks that a compiled module verifies and that its text survives a parse and a reprint.
void checkModule(const dtnn::ir::Module &m, std::ostream &sink) {
  if (!dtnn::ir::verifyModule(m).empty())
    dtnn::fuzz::fail("the front end produced a module that does not verify");
  dtnn::fuzz::checkRoundTrip(m, sink);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  dtnn::fuzz::QuietDiagnostics quiet;
  auto &[buffer, sink, sm, diags] = quiet;
  dtnn::frontend::CompileOptions opts;
  std::string text(reinterpret_cast<const char *>(data), size);
  auto module = dtnn::frontend::compileSource("fuzz.dtnn", std::move(text), opts, sm, diags);
  if (module && diags.hasErrors()) dtnn::fuzz::fail("a module was returned together with errors");
  if (!module && !diags.hasErrors()) dtnn::fuzz::fail("compilation failed without reporting an error");
  if (module) checkModule(*module, sink);
  return 0;
}
