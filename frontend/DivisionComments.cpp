#include "frontend/DivisionComments.h"

#include "DtnnLexer.h"
#include "DtnnParser.h"
#include "antlr4-runtime.h"

#include <set>

namespace dtnn::frontend {

using grammar::DtnnLexer;
using grammar::DtnnParser;

namespace {

bool endsOperand(const antlr4::Token *t) {
  switch (t->getType()) {
  case DtnnLexer::ID:
  case DtnnLexer::INT:
  case DtnnLexer::FLOAT: return true;
  default: return t->getText() == ")" || t->getText() == "]";
  }
}

// Whether `text` is one whole expression of the language; collects its names.
bool isExpression(const std::string &text, std::vector<std::string> &names) {
  antlr4::ANTLRInputStream input(text);
  DtnnLexer lexer(&input);
  lexer.removeErrorListeners();
  antlr4::CommonTokenStream tokens(&lexer);
  DtnnParser parser(&tokens);
  parser.removeErrorListeners();
  parser.setErrorHandler(std::make_shared<antlr4::BailErrorStrategy>());
  try {
    parser.expr();
  } catch (const antlr4::ParseCancellationException &) {
    return false;
  }
  if (tokens.LA(1) != antlr4::Token::EOF) return false;
  for (antlr4::Token *t : tokens.getTokens())
    if (t->getType() == DtnnLexer::ID) names.push_back(t->getText());
  return true;
}

} // namespace

bool checkDivisionComments(const std::string &file, const std::u32string &chars,
                           const std::vector<antlr4::Token *> &tokens, DiagnosticEngine &diags) {
  std::set<std::string> codeNames;
  for (const antlr4::Token *t : tokens)
    if (t->getType() == DtnnLexer::ID) codeNames.insert(t->getText());
  bool ok = true;
  for (const antlr4::Token *t : tokens) {
    if (!endsOperand(t)) continue;
    size_t i = t->getStopIndex() + 1;
    while (i < chars.size() && (chars[i] == ' ' || chars[i] == '\t')) ++i;
    if (i + 1 >= chars.size() || chars[i] != '/' || chars[i + 1] != '/') continue;
    size_t begin = i + 2, end = begin;
    while (end < chars.size() && chars[end] != '\n' && chars[end] != '\r') ++end;
    std::string rest = antlrcpp::utf32_to_utf8(chars.substr(begin, end - begin));
    std::vector<std::string> names;
    if (rest.find_first_not_of(" \t") == std::string::npos || !isExpression(rest, names)) continue;
    bool allKnown = true;
    for (const std::string &n : names) allKnown &= codeNames.count(n) != 0;
    if (!allKnown) continue;
    size_t first = rest.find_first_not_of(" \t"), last = rest.find_last_not_of(" \t");
    std::string shown = rest.substr(first, last - first + 1);
    uint32_t col = static_cast<uint32_t>(t->getCharPositionInLine() + 1 +
                                         (i - t->getStartIndex()));
    diags.error({file, static_cast<uint32_t>(t->getLine()), col},
                "'//' starts a comment, so '" + shown + "' after it is not part of the "
                "expression; integer division is '/' between ints (7 / 2 is 3). To keep a "
                "comment here, put it on a line of its own or write it as /* ... */");
    ok = false;
  }
  return ok;
}

} // namespace dtnn::frontend
