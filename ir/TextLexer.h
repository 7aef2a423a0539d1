// The lexer of the textual IR: turns text into tokens on demand, one at a
// time, so memory does not grow with the input. Bad bytes, unterminated
// strings and malformed numbers are reported to the diagnostic engine and
// come back as an Error token.
#pragma once

#include "ir/Diagnostics.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace dtnn::ir {

// One token with its position in the text.
struct Token {
  enum Kind {
    Eof,
    Error,    // A lexical error, already reported.
    Ident,    // [A-Za-z_][A-Za-z0-9_.]*: keywords, op names, dtypes.
    ValueRef, // %name; `str` holds the name without the sigil.
    ParamRef, // @name; `str` holds the name without the sigil.
    Integer,  // -?[0-9]+; the value is in `intValue`.
    Float,    // A number with a fraction or exponent; the value is in `floatValue`.
    String,   // "..."; `str` holds the unescaped contents.
    LParen,
    RParen,
    LBracket,
    RBracket,
    LBrace,
    RBrace,
    Comma,
    Colon,
    Equal,
    Arrow,
    Question,
    Minus,
    Star,
  };
  Kind kind = Eof;
  std::string_view spelling; // The token's text as written.
  std::string str;
  int64_t intValue = 0;
  double floatValue = 0;
  SourceLoc loc;
  bool newlineBefore = false; // A line break separates it from the previous token.

  bool is(Kind k) const { return kind == k; }
  bool isIdent(std::string_view s) const { return kind == Ident && spelling == s; }
};

// A short, printable rendering of a token for messages.
std::string tokenDescription(const Token &t);

// Produces the tokens of one text; reports lexical errors to `diags`.
class TextLexer {
public:
  // `text` must outlive the lexer (the source manager owns it).
  TextLexer(std::string_view text, std::string file, DiagnosticEngine &diags)
      : text_(text), file_(std::move(file)), diags_(diags) {}

  // Returns the next token; after Eof or Error it keeps returning that.
  Token next();

private:
  Token make(Token::Kind k, size_t begin);
  Token fail(size_t at, std::string message);
  SourceLoc locAt(size_t pos) const;
  bool skipTrivia();
  Token lexNumber(size_t begin);
  Token lexString(size_t begin);
  Token lexSigilName(size_t begin, Token::Kind k);
  // True, with the error in `bad`, when the word from `begin` runs on into
  // non-ASCII letters (valid UTF-8): the whole word is not a name.
  bool notAName(size_t begin, Token &bad);

  std::string_view text_;
  std::string file_;
  DiagnosticEngine &diags_;
  size_t pos_ = 0;
  size_t line_ = 1;
  size_t lineStart_ = 0;
  bool sawNewline_ = false;
  bool failed_ = false;
};

} // namespace dtnn::ir
