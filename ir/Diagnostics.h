// The source manager that holds file text for printing source lines, and
// the diagnostic engine that formats compiler messages as
// `FILE:LINE:COL: error: MESSAGE`, the source line, a caret, then notes.
#pragma once

#include "ir/Error.h"

#include <cstdint>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace dtnn {

// Owns the text of every file read during a compilation, keyed by the name
// under which diagnostics print it.
class SourceManager {
public:
  // Registers text under a name; returns a stable reference to the text.
  const std::string &add(const std::string &name, std::string text);
  // The text of line `line` (1-based) of `file`, without its line ending; empty if unknown.
  std::string lineText(const std::string &file, uint32_t line) const;
  // The texts of every file added, in the order of their names.
  std::vector<std::string_view> texts() const;

private:
  // Every kLineStride-th line start is indexed; lineText scans from the nearest one, so that
  // the index stays small even for a file of empty lines.
  static constexpr uint32_t kLineStride = 256;
  struct Buffer {
    std::string text;
    std::vector<size_t> strideStarts; // start of lines 1, 1 + kLineStride, ...
    uint32_t lines = 0;
  };
  std::map<std::string, std::unique_ptr<Buffer>> buffers_;
};

enum class Severity { Error, Warning, Note };

// One message with its notes.
struct Diagnostic {
  Severity severity = Severity::Error;
  SourceLoc loc;
  std::string message;
  std::vector<Diagnostic> notes;

  Diagnostic &note(SourceLoc where, std::string text) {
    notes.push_back({Severity::Note, std::move(where), std::move(text), {}});
    return *this;
  }
};

// Formats diagnostics to a stream, counts errors, and stops printing after a
// limit so that a file full of mistakes cannot flood the terminal.
class DiagnosticEngine {
public:
  DiagnosticEngine(const SourceManager &sm, std::ostream &os, unsigned maxErrors = 20)
      : sm_(sm), os_(os), maxErrors_(maxErrors) {}

  void report(const Diagnostic &d);
  // Reports a failure as an error at its location, followed by its notes; checks it.
  void report(const Error &e);
  void error(SourceLoc loc, std::string message) {
    report({Severity::Error, std::move(loc), std::move(message), {}});
  }
  unsigned errorCount() const { return errors_; }
  bool hasErrors() const { return errors_ != 0; }
  // True once the error limit was reached; callers may stop early.
  bool tooManyErrors() const { return errors_ >= maxErrors_; }

private:
  void print(const Diagnostic &d);
  const SourceManager &sm_;
  std::ostream &os_;
  unsigned maxErrors_;
  unsigned errors_ = 0;
  bool limitAnnounced_ = false;
};

// Length in bytes of the well-formed UTF-8 sequence starting at s[i], or 0
// if the bytes there are not valid UTF-8 (overlong forms, surrogates and
// code points above U+10FFFF are invalid).
size_t utf8SequenceLength(const std::string &s, size_t i);

// Returns the candidate closest to `name` by edit distance, or "" when none is
// close enough to be a plausible typo.
std::string closestMatch(const std::string &name, const std::vector<std::string> &candidates);

} // namespace dtnn
