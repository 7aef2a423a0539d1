#include "frontend/Parse.h"

#include "frontend/OldComments.h"

#include "DtnnLexer.h"
#include "DtnnParser.h"
#include "antlr4-runtime.h"

#include <cstdio>

namespace dtnn::frontend {

using grammar::DtnnLexer;
using grammar::DtnnParser;

namespace {

// ANTLR's input stream over text that checkBytes has found to be valid UTF-8, decoded
// here at 4 bytes a character: the runtime's own decoder grows its buffer to about
// 20 bytes a byte of source on the way.
class SourceInput : public antlr4::ANTLRInputStream {
public:
  explicit SourceInput(const std::string &utf8) {
    size_t chars = 0;
    for (unsigned char c : utf8) chars += (c & 0xc0) != 0x80;
    _data.reserve(chars);
    for (size_t i = 0; i < utf8.size();) {
      auto byte = [&](size_t k) { return static_cast<unsigned char>(utf8[i + k]); };
      unsigned char c = byte(0);
      size_t len = c < 0x80 ? 1 : c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;
      char32_t cp = len == 1 ? c : c & (0x7f >> len);
      for (size_t k = 1; k < len; ++k) cp = (cp << 6) | (byte(k) & 0x3f);
      _data.push_back(cp);
      i += len;
    }
  }
  // The source, one element a character, as token indices count.
  const std::u32string &chars() const { return _data; }
};

// Thrown by the error listener to abandon a parse after too many errors;
// never leaves this file.
struct TooManyErrors {};

std::string shorten(const std::string &s) {
  return s.size() <= 40 ? s : s.substr(0, 37) + "...";
}

// Rewrites ANTLR's messages into the compiler's voice.
std::string rewriteSyntaxMessage(std::string msg, const std::string &found) {
  auto replaceAll = [](std::string &s, const std::string &from, const std::string &to) {
    for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size()))
      s.replace(p, from.size(), to);
  };
  replaceAll(msg, "'<EOF>'", "end of file");
  replaceAll(msg, "<EOF>", "end of file");
  // The keywords that are names where a name may stand (`var`, `block`, ...): among expected
  // tokens, the names (ID) say them. `var` and `repeat` stay among a statement's keywords.
  size_t expecting = msg.find(" expecting ");
  if (expecting != std::string::npos && msg.find("ID", expecting) != std::string::npos) {
    std::string expected = msg.substr(expecting);
    // `true` and `True` are one token, which ANTLR names by its rule.
    replaceAll(expected, " TRUE,", " 'true',");
    replaceAll(expected, " FALSE,", " 'false',");
    bool statement = expected.find("'let'") != std::string::npos;
    for (const char *soft : {"'import', ", "'block', ", "'model', ", "'train', "})
      replaceAll(expected, soft, "");
    if (!statement) {
      replaceAll(expected, "'repeat', ", "");
      replaceAll(expected, "'var', ", "");
      replaceAll(expected, "{ID}", "ID");
    }
    msg = msg.substr(0, expecting) + expected;
  }
  const std::string mismatched = "mismatched input ", extraneous = "extraneous input ";
  size_t exp = msg.find(" expecting ");
  if (msg.rfind(mismatched, 0) == 0 && exp != std::string::npos)
    return "expected " + msg.substr(exp + 11) + ", found " +
           shorten(msg.substr(mismatched.size(), exp - mismatched.size()));
  if (msg.rfind(extraneous, 0) == 0 && exp != std::string::npos)
    return "unexpected " + shorten(msg.substr(extraneous.size(), exp - extraneous.size())) +
           "; expected " + msg.substr(exp + 11);
  if (msg.rfind("missing ", 0) == 0) {
    size_t at = msg.find(" at ");
    if (at != std::string::npos)
      return "missing " + msg.substr(8, at - 8) + " before " + shorten(msg.substr(at + 4));
  }
  if (msg.rfind("no viable alternative", 0) == 0)
    return "unexpected " + (found == "<EOF>" ? std::string("end of file") : "'" + shorten(found) + "'");
  return msg;
}

// The keywords that start expressions, statements or bindings, which cannot be names.
bool isHardKeyword(const antlr4::Token *t) {
  switch (t->getType()) {
  case DtnnLexer::LET:
  case DtnnLexer::FOR:
  case DtnnLexer::IN:
  case DtnnLexer::IF:
  case DtnnLexer::ELSE:
  case DtnnLexer::RETURN:
  case DtnnLexer::TRUE:
  case DtnnLexer::FALSE:
  case DtnnLexer::NONE:
  case DtnnLexer::IS:
  case DtnnLexer::NOT:
  case DtnnLexer::AND:
  case DtnnLexer::OR: return true;
  default: return false;
  }
}

class SyntaxErrorListener : public antlr4::BaseErrorListener {
public:
  SyntaxErrorListener(const std::string &file, DiagnosticEngine &diags) : file_(file), diags_(diags) {}
  void syntaxError(antlr4::Recognizer *recognizer, antlr4::Token *offending, size_t line,
                   size_t col, const std::string &msg, std::exception_ptr) override {
    // A keyword where a name belongs (`let for = 3`, `for = 3`, `f(in=2)`): one message naming
    // it, then the parse stops, since what follows would only repeat the mistake.
    const antlr4::Token *keyword = nullptr;
    size_t expecting = msg.find(" expecting ");
    auto *parser = dynamic_cast<antlr4::Parser *>(recognizer);
    const antlr4::Token *prev = parser ? parser->getTokenStream()->LT(-1) : nullptr;
    bool nameExpected = expecting != std::string::npos &&
                        msg.find("ID", expecting) != std::string::npos;
    // After `(` or `,` of a parameter list the expected tokens may leave names out.
    bool afterSeparator = prev && (prev->getText() == "(" || prev->getText() == ",");
    if (offending && isHardKeyword(offending) && (nameExpected || afterSeparator))
      keyword = offending;
    if (!keyword && offending && offending->getText() == "=" && prev && isHardKeyword(prev))
      keyword = prev;
    if (keyword) {
      std::string word = keyword->getText();
      diags_.error({file_, static_cast<uint32_t>(keyword->getLine()),
                    static_cast<uint32_t>(keyword->getCharPositionInLine() + 1)},
                   "'" + word + "' is a keyword and cannot be a name; rename it (for example '" +
                       word + "_')");
      throw TooManyErrors{};
    }
    std::string found = offending ? offending->getText() : "";
    diags_.error({file_, static_cast<uint32_t>(line), static_cast<uint32_t>(col + 1)},
                 rewriteSyntaxMessage(msg, found));
    if (diags_.tooManyErrors()) throw TooManyErrors{};
  }

private:
  const std::string &file_;
  DiagnosticEngine &diags_;
};

// Reports NUL bytes and invalid UTF-8, which the lexer cannot represent.
// Columns count code points, as the lexer's do.
bool checkBytes(const std::string &name, const std::string &text, DiagnosticEngine &diags) {
  uint32_t line = 1, col = 1;
  bool ok = true;
  for (size_t i = 0; i < text.size();) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    size_t len = utf8SequenceLength(text, i);
    if (len == 0 || c == 0) {
      char buf[64];
      if (c == 0)
        std::snprintf(buf, sizeof buf, "NUL character in source file");
      else
        std::snprintf(buf, sizeof buf, "invalid UTF-8 byte 0x%02x", c);
      diags.error({name, line, col}, buf);
      ok = false;
      if (diags.tooManyErrors()) return false;
      ++i;
      ++col;
      continue;
    }
    if (c == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
    i += len;
  }
  return ok;
}

SourceLoc locOf(const std::string &file, const antlr4::Token *t) {
  return {file, static_cast<uint32_t>(t->getLine()),
          static_cast<uint32_t>(t->getCharPositionInLine() + 1)};
}

// Whether token t is part of a word: a name, or a non-ASCII character.
bool inWord(const antlr4::Token *t) {
  if (t->getType() == DtnnLexer::ID) return true;
  std::string text = t->getType() == DtnnLexer::BAD_CHAR ? t->getText() : "";
  return !text.empty() && static_cast<unsigned char>(text[0]) >= 0x80;
}

// The tokens [first, last] of the word around non-ASCII character i, where
// each touches the next (`relü`, `dënse`).
std::pair<size_t, size_t> wordAround(const std::vector<antlr4::Token *> &tokens, size_t i) {
  auto touch = [&](size_t a, size_t b) {
    return tokens[a]->getStopIndex() + 1 == tokens[b]->getStartIndex();
  };
  size_t first = i, last = i;
  while (first > 0 && inWord(tokens[first - 1]) && touch(first - 1, first)) --first;
  while (last + 1 < tokens.size() && inWord(tokens[last + 1]) && touch(last, last + 1)) ++last;
  return {first, last};
}

// Reports lexical errors and nesting deeper than the parser may recurse.
bool checkTokens(const std::string &name, const std::vector<antlr4::Token *> &tokens,
                 DiagnosticEngine &diags) {
  bool ok = true;
  unsigned depth = 0, unaryRun = 0;
  size_t wordEnd = 0; // tokens before this one belong to a word already reported
  for (size_t i = 0; i < tokens.size(); ++i) {
    const antlr4::Token *t = tokens[i];
    if (i < wordEnd && inWord(t)) continue;
    switch (t->getType()) {
    case DtnnLexer::UNTERMINATED_STRING:
      diags.error(locOf(name, t), "unterminated string literal");
      ok = false;
      break;
    case DtnnLexer::UNTERMINATED_COMMENT:
      diags.error(locOf(name, t), "unterminated block comment");
      ok = false;
      break;
    case DtnnLexer::BAD_CHAR: {
      std::string text = t->getText();
      unsigned char c = text.empty() ? 0 : static_cast<unsigned char>(text[0]);
      char buf[32];
      if (c >= 0x80) {
        // A name with a non-ASCII letter is reported whole, at its start.
        auto [first, last] = wordAround(tokens, i);
        std::string word;
        for (size_t k = first; k <= last; ++k) word += tokens[k]->getText();
        if (first != last) {
          diags.error(locOf(name, tokens[first]),
                      "'" + word + "' is not a name: names are ASCII letters, digits and '_'");
          wordEnd = last + 1;
          ok = false;
          break;
        }
        buf[0] = 0; // a lone non-ASCII character, shown as itself
      } else if (c >= 0x21 && c < 0x7f) {
        std::snprintf(buf, sizeof buf, "'%c'", c);
      } else {
        std::snprintf(buf, sizeof buf, "byte 0x%02x", c);
      }
      diags.error(locOf(name, t), std::string("unexpected character ") +
                                      (buf[0] ? std::string(buf) : "'" + text + "'"));
      ok = false;
      break;
    }
    default: break;
    }
    if (diags.tooManyErrors()) return false;
    const std::string text = t->getType() == antlr4::Token::EOF ? "" : t->getText();
    if (text == "(" || text == "[" || text == "{") {
      if (++depth > kMaxNesting) {
        diags.error(locOf(name, t), "nesting is deeper than " + std::to_string(kMaxNesting) +
                                        " levels of brackets");
        return false;
      }
    } else if ((text == ")" || text == "]" || text == "}") && depth > 0) {
      --depth;
    }
    unaryRun = (text == "-" || text == "!") ? unaryRun + 1 : 0;
    if (unaryRun > kMaxNesting) {
      diags.error(locOf(name, t), "more than " + std::to_string(kMaxNesting) +
                                      " prefix operators in a row");
      return false;
    }
  }
  return ok;
}

} // namespace

std::unique_ptr<FileAst> buildAst(const std::string &name, DtnnParser::FileContext *tree,
                                  DiagnosticEngine &diags);

std::unique_ptr<FileAst> parseSource(const std::string &name, const std::string &text,
                                     DiagnosticEngine &diags) {
  if (text.size() > kMaxFileBytes) {
    diags.error({name, 0, 0}, "file is larger than " + std::to_string(kMaxFileBytes >> 20) + " MB");
    return nullptr;
  }
  if (!checkBytes(name, text, diags)) return nullptr;
  SourceInput input(text);
  DtnnLexer lexer(&input);
  lexer.removeErrorListeners();
  std::vector<std::unique_ptr<antlr4::Token>> lexed;
  std::vector<antlr4::Token *> view;
  while (true) {
    lexed.push_back(lexer.nextToken());
    view.push_back(lexed.back().get());
    if (view.back()->getType() == antlr4::Token::EOF) break;
    if (lexed.size() > kMaxTokens) {
      diags.error(locOf(name, view.back()), "file has more than " + std::to_string(kMaxTokens) +
                                                " tokens; split it into imported files");
      return nullptr;
    }
  }
  // An old `//` comment first: its words would otherwise be reported as bad tokens.
  if (!checkOldComments(name, input.chars(), view, diags)) return nullptr;
  if (!checkTokens(name, view, diags)) return nullptr;
  antlr4::ListTokenSource source(std::move(lexed));
  antlr4::CommonTokenStream tokens(&source);

  DtnnParser parser(&tokens);
  parser.removeErrorListeners();
  // Two-stage parse: the fast SLL mode bails out on the first problem, then
  // the full LL mode reparses to report errors properly.
  parser.getInterpreter<antlr4::atn::ParserATNSimulator>()->setPredictionMode(
      antlr4::atn::PredictionMode::SLL);
  parser.setErrorHandler(std::make_shared<antlr4::BailErrorStrategy>());
  DtnnParser::FileContext *tree = nullptr;
  try {
    tree = parser.file();
  } catch (const antlr4::ParseCancellationException &) {
    tree = nullptr;
  }
  if (!tree) {
    tokens.seek(0);
    parser.reset();
    SyntaxErrorListener listener(name, diags);
    parser.addErrorListener(&listener);
    parser.setErrorHandler(std::make_shared<antlr4::DefaultErrorStrategy>());
    parser.getInterpreter<antlr4::atn::ParserATNSimulator>()->setPredictionMode(
        antlr4::atn::PredictionMode::LL);
    unsigned before = diags.errorCount();
    try {
      tree = parser.file();
    } catch (const TooManyErrors &) {
      return nullptr;
    }
    parser.removeErrorListeners();
    if (diags.errorCount() != before) return nullptr;
  }
  return buildAst(name, tree, diags);
}

} // namespace dtnn::frontend
