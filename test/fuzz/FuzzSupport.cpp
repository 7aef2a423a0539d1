#include "test/fuzz/FuzzSupport.h"
#include "dtnn/Registry.h"

#include "ir/Printer.h"
#include "ir/TextParser.h"

#include <cstdio>
#include <cstdlib>
#include <string>

namespace dtnn::fuzz {

void fail(const char *what) {
  std::fprintf(stderr, "fuzz invariant violated: %s\n", what);
  std::abort();
}

void checkRoundTrip(const ir::Module &m, std::ostream &sink) {
  std::string text = ir::printModule(m);
  SourceManager sm;
  DiagnosticEngine diags(sm, sink);
  auto reparsed = ir::parseModule(text, "fuzz.dtir", sm, diags);
  if (!reparsed) fail("the printed module does not parse");
  if (ir::printModule(*reparsed) != text) fail("print(parse(print(m))) differs from print(m)");
}

} // namespace dtnn::fuzz

// libFuzzer calls this once before the first input; the replay driver too.
extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  if (dtnn::Error e = dtnn::registerBuiltins()) dtnn::fuzz::fail(e.message().c_str());
  return 0;
}
