// The textual IR parser's class, shared by the two files that implement it:
// TextParser.cpp (modules, graphs, ops and regions) and TextParserValues.cpp
// (attributes, types, locations and the train line). Internal to ir/.
#pragma once

#include "ir/IR.h"
#include "ir/TextLexer.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace dtnn::ir::textparse {

// "; did you mean 'x'?" when a candidate is close to `name`, else "".
// `sigil` is prepended to the suggestion.
inline std::string didYouMean(const std::string &name,
                              const std::vector<std::string> &candidates, const char *sigil = "") {
  std::string best = closestMatch(name, candidates);
  return best.empty() ? "" : std::string("; did you mean '") + sigil + best + "'?";
}

// Reads one module's text, token by token; each parse function reports its
// error to the diagnostic engine and returns false.
class Parser {
public:
  Parser(std::string_view text, const std::string &file, DiagnosticEngine &diags,
         TextPositions *positions)
      : lex_(text, file, diags), diags_(diags), positions_(positions) {
    tok_ = lex_.next();
  }

  std::unique_ptr<Module> parseModule();

private:
  void advance() { tok_ = lex_.next(); }
  // Reports `message` at `t` unless the lexer already reported it.
  bool errorAt(const Token &t, std::string message) {
    if (!t.is(Token::Error)) diags_.error(t.loc, std::move(message));
    return false;
  }
  bool errorWithNote(const Token &t, std::string message, const SourceLoc &prev) {
    Diagnostic d{Severity::Error, t.loc, std::move(message), {}};
    d.note(prev, "previous definition is here");
    diags_.report(d);
    return false;
  }
  // Consumes a token of kind `k`, or reports "expected <what>".
  bool expect(Token::Kind k, const char *what) {
    if (!tok_.is(k))
      return errorAt(tok_, std::string("expected ") + what + ", got " + tokenDescription(tok_));
    advance();
    return true;
  }
  // Requires the next token to start a new line (or end the input).
  bool expectLineEnd(const char *after) {
    if (tok_.is(Token::Eof) || tok_.is(Token::Error) || tok_.newlineBefore) return true;
    return errorAt(tok_, std::string("expected end of line after ") + after + ", got " +
                             tokenDescription(tok_));
  }

  bool parseTrainConfig();
  bool parseParam();
  bool parseGraph();
  bool parseOp(Graph &g);
  bool parseInputs(Graph &g, const char *what, const char *example, const char *short_);
  bool parseBody(const Token &opTok, std::unique_ptr<Graph> &body);
  bool parseBodyContents(const Token &opTok, Graph &body);
  bool parseOperand(Value *&v);
  bool parseAttrs(const OpDef &def, AttrMap &attrs);
  bool parseAttrValue(AttrValue &v);
  bool parseScalar(AttrValue &v);
  bool parseType(TensorType &t);
  bool parseLocation(Location &l);
  bool parseSourceLoc(SourceLoc &l);
  bool parseUInt32(uint32_t &v, const char *what);
  bool defineValue(const Token &t, Value *v);

  TextLexer lex_;
  DiagnosticEngine &diags_;
  TextPositions *positions_; // Filled when the caller asks where things were read.
  Token tok_;
  std::unique_ptr<Module> module_ = std::make_unique<Module>();
  std::map<std::string, std::pair<Param *, SourceLoc>> params_;
  std::map<std::string, SourceLoc> graphs_;
  // Values in scope in the current graph, with where they were defined.
  std::map<std::string, std::pair<Value *, SourceLoc>> values_;
  // How many region bodies enclose the op being read (none: a graph's op).
  int bodyDepth_ = 0;
};

} // namespace dtnn::ir::textparse
