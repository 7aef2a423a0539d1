// What the fuzz entry points share: a sink for diagnostics, the failure
// report, and the print/parse round trip every valid module must survive.
#pragma once

#include "ir/IR.h"

#include <ostream>
#include <streambuf>

namespace dtnn::fuzz {

// A stream buffer that discards everything written to it.
class NullBuffer : public std::streambuf {
protected:
  int overflow(int c) override { return traits_type::not_eof(c); }
  std::streamsize xsputn(const char *, std::streamsize n) override { return n; }
};

// A source manager and a diagnostic engine whose messages are discarded.
struct QuietDiagnostics {
  NullBuffer buffer;
  std::ostream sink{&buffer};
  SourceManager sm;
  DiagnosticEngine diags{sm, sink};
};

// Stops the run with a message; libFuzzer and the replay driver both report the abort.
[[noreturn]] void fail(const char *what);

// Checks that `m`'s text parses back and prints the same; diagnostics go to `sink`.
void checkRoundTrip(const ir::Module &m, std::ostream &sink);

} // namespace dtnn::fuzz
