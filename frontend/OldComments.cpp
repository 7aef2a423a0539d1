#include "frontend/OldComments.h"

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

// Whether `text` starts with an expression of the language that can be a divisor
// (not a list or a string), followed by the end of the line or by what may
// follow an expression (`)`, `]`, `}`, `,`, `;`, `{`); collects its names.
bool startsWithDivisor(const std::string &text, std::vector<std::string> &names) {
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
  antlr4::Token *next = tokens.LT(1);
  static const std::set<std::string> followers = {")", "]", "}", ",", ";", "{"};
  if (next->getType() != antlr4::Token::EOF && !followers.count(next->getText())) return false;
  const std::vector<antlr4::Token *> &all = tokens.getTokens();
  if (all.empty() || all[0]->getText() == "[" || all[0]->getType() == DtnnLexer::STRING)
    return false;
  for (antlr4::Token *t : all) {
    if (t == next) break;
    if (t->getType() == DtnnLexer::ID) names.push_back(t->getText());
  }
  return true;
}

bool isFloorDivision(const antlr4::Token *t) { return t->getText() == "//"; }

} // namespace

bool checkOldComments(const std::string &file, const std::u32string &chars,
                      const std::vector<antlr4::Token *> &tokens, DiagnosticEngine &diags) {
  // The names of the code: those outside the rest of a line after a `//`.
  std::set<std::string> codeNames;
  size_t skipLine = 0;
  for (const antlr4::Token *t : tokens) {
    if (isFloorDivision(t))
      skipLine = t->getLine();
    else if (t->getLine() != skipLine && t->getType() == DtnnLexer::ID)
      codeNames.insert(t->getText());
  }
  bool ok = true;
  for (size_t k = 0; k < tokens.size(); ++k) {
    const antlr4::Token *t = tokens[k];
    if (!isFloorDivision(t)) continue;
    size_t begin = t->getStopIndex() + 1, end = begin;
    while (end < chars.size() && chars[end] != '\n' && chars[end] != '\r') ++end;
    std::string rest = antlrcpp::utf32_to_utf8(chars.substr(begin, end - begin));
    const antlr4::Token *prev = k ? tokens[k - 1] : nullptr;
    bool division = prev && prev->getLine() == t->getLine() && endsOperand(prev);
    std::vector<std::string> names;
    division = division && startsWithDivisor(rest, names);
    for (const std::string &n : names) division = division && codeNames.count(n) != 0;
    if (division) continue;
    size_t first = rest.find_first_not_of(" \t"), last = rest.find_last_not_of(" \t");
    std::string shown = first == std::string::npos ? "" : rest.substr(first, last - first + 1);
    diags.error({file, static_cast<uint32_t>(t->getLine()),
                 static_cast<uint32_t>(t->getCharPositionInLine() + 1)},
                "comments start with '#', as in Python, and '//' is floor division; this '//' "
                "reads as a comment: write '#" +
                    (shown.empty() ? "" : " " + shown) + "'");
    ok = false;
    if (diags.tooManyErrors()) return false;
  }
  return ok;
}

} // namespace dtnn::frontend
