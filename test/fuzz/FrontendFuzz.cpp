// The front end's fuzz entry point. It compiles arbitrary bytes as a .dtnn
// file and checks the invariants that must hold for every input: no crash,
// and for every model that compiles, a module that verifies and whose text
// form parses back to the same text.
#include "frontend/Frontend.h"
#include "ir/Printer.h"
#include "ir/TextParser.h"
#include "ir/Verifier.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ostream>
#include <streambuf>
#include <string>

namespace {

// A stream buffer that discards everything written to it.
class NullBuffer : public std::streambuf {
protected:
  int overflow(int c) override { return traits_type::not_eof(c); }
  std::streamsize xsputn(const char *, std::streamsize n) override { return n; }
};

// Stops the run with a message; libFuzzer and the replay driver both report the abort.
[[noreturn]] void fail(const char *what) {
  std::fprintf(stderr, "fuzz invariant violated: %s\n", what);
  std::abort();
}

// Checks that a compiled module verifies and that its text survives a parse and a reprint.
void checkModule(const dtnn::ir::Module &m, std::ostream &sink) {
  if (!dtnn::ir::verifyModule(m).empty()) fail("the front end produced a module that does not verify");
  std::string text = dtnn::ir::printModule(m);
  dtnn::SourceManager sm;
  dtnn::DiagnosticEngine diags(sm, sink);
  auto reparsed = dtnn::ir::parseModule(text, "fuzz.dtir", sm, diags);
  if (!reparsed) fail("the printed module does not parse");
  if (dtnn::ir::printModule(*reparsed) != text) fail("print(parse(print(m))) differs from print(m)");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  NullBuffer buffer;
  std::ostream sink(&buffer);
  dtnn::SourceManager sm;
  dtnn::DiagnosticEngine diags(sm, sink);
  dtnn::frontend::CompileOptions opts;
  std::string text(reinterpret_cast<const char *>(data), size);
  auto module = dtnn::frontend::compileSource("fuzz.dtnn", std::move(text), opts, sm, diags);
  if (module && diags.hasErrors()) fail("a module was returned together with errors");
  if (!module && !diags.hasErrors()) fail("compilation failed without reporting an error");
  if (module) checkModule(*module, sink);
  return 0;
}
