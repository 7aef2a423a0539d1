#include "ir/TextLexer.h"

#include <algorithm>
#include <charconv>
#include <cstdio>

namespace dtnn::ir {

namespace {

bool isAlpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool isDigit(char c) { return c >= '0' && c <= '9'; }
bool isNameChar(char c) { return isAlpha(c) || isDigit(c) || c == '.'; }

// Quotes text for a message, cutting it short and escaping unprintable bytes.
std::string shown(std::string_view s) {
  const size_t kMax = 40;
  std::string out;
  for (size_t i = 0; i < s.size() && i < kMax; ++i) {
    unsigned char u = static_cast<unsigned char>(s[i]);
    if (u < 0x20 || u >= 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", u);
      out += buf;
    } else {
      out += s[i];
    }
  }
  if (s.size() > kMax) out += "...";
  return out;
}

} // namespace

std::string tokenDescription(const Token &t) {
  switch (t.kind) {
  case Token::Eof: return "end of input";
  case Token::Error: return "an invalid token";
  case Token::String: return "string \"" + shown(t.str) + "\"";
  default: return "'" + shown(t.spelling) + "'";
  }
}

SourceLoc TextLexer::locAt(size_t pos) const {
  auto clamp = [](size_t v) { return static_cast<uint32_t>(std::min<size_t>(v, UINT32_MAX)); };
  return {file_, clamp(line_), clamp(pos - lineStart_ + 1)};
}

Token TextLexer::make(Token::Kind k, size_t begin) {
  Token t;
  t.kind = k;
  t.spelling = text_.substr(begin, pos_ - begin);
  t.loc = locAt(begin);
  t.newlineBefore = sawNewline_;
  return t;
}

Token TextLexer::fail(size_t at, std::string message) {
  diags_.error(locAt(at), std::move(message));
  failed_ = true;
  Token t;
  t.kind = Token::Error;
  t.loc = locAt(at);
  return t;
}

// Skips whitespace and `//` comments; returns false at end of input.
bool TextLexer::skipTrivia() {
  while (pos_ < text_.size()) {
    char c = text_[pos_];
    if (c == '\n') {
      ++pos_;
      ++line_;
      lineStart_ = pos_;
      sawNewline_ = true;
    } else if (c == ' ' || c == '\t' || c == '\r') {
      ++pos_;
    } else if (c == '/' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '/') {
      size_t end = text_.find('\n', pos_);
      pos_ = end == std::string_view::npos ? text_.size() : end;
    } else {
      return true;
    }
  }
  return false;
}

Token TextLexer::next() {
  if (failed_) {
    Token t;
    t.kind = Token::Error;
    t.loc = locAt(pos_);
    return t;
  }
  sawNewline_ = false;
  if (!skipTrivia()) return make(Token::Eof, pos_);
  size_t begin = pos_;
  char c = text_[pos_];
  if (isAlpha(c)) {
    while (pos_ < text_.size() && isNameChar(text_[pos_])) ++pos_;
    if (Token bad; notAName(begin, bad)) return bad;
    return make(Token::Ident, begin);
  }
  if (isDigit(c) || (c == '-' && pos_ + 1 < text_.size() && isDigit(text_[pos_ + 1])))
    return lexNumber(begin);
  if (c == '"') return lexString(begin);
  if (c == '%') return lexSigilName(begin, Token::ValueRef);
  if (c == '@') return lexSigilName(begin, Token::ParamRef);
  ++pos_;
  switch (c) {
  case '(': return make(Token::LParen, begin);
  case ')': return make(Token::RParen, begin);
  case '[': return make(Token::LBracket, begin);
  case ']': return make(Token::RBracket, begin);
  case '{': return make(Token::LBrace, begin);
  case '}': return make(Token::RBrace, begin);
  case ',': return make(Token::Comma, begin);
  case ':': return make(Token::Colon, begin);
  case '=': return make(Token::Equal, begin);
  case '?': return make(Token::Question, begin);
  case '*': return make(Token::Star, begin);
  case '-':
    if (pos_ < text_.size() && text_[pos_] == '>') {
      ++pos_;
      return make(Token::Arrow, begin);
    }
    return make(Token::Minus, begin);
  default: break;
  }
  unsigned char u = static_cast<unsigned char>(c);
  if (u == 0) return fail(begin, "unexpected NUL byte");
  pos_ = begin;
  if (Token bad; u >= 0x80 && notAName(begin, bad)) return bad;
  ++pos_;
  if (u >= 0x80) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "%02X", u);
    return fail(begin, std::string("invalid byte 0x") + buf +
                           " (only ASCII is allowed outside "
                           "strings and comments)");
  }
  if (u < 0x20 || u == 0x7f) return fail(begin, "unexpected control character " + shown({&c, 1}));
  return fail(begin, "unexpected character '" + std::string(1, c) + "'");
}

// number ::= '-'? [0-9]+ ('.' [0-9]+)? ([eE] [+-]? [0-9]+)?
Token TextLexer::lexNumber(size_t begin) {
  bool isFloat = false;
  if (text_[pos_] == '-') ++pos_;
  while (pos_ < text_.size() && isDigit(text_[pos_])) ++pos_;
  auto digitsFollow = [&](size_t at) { return at < text_.size() && isDigit(text_[at]); };
  if (pos_ < text_.size() && text_[pos_] == '.' && digitsFollow(pos_ + 1)) {
    isFloat = true;
    ++pos_;
    while (digitsFollow(pos_)) ++pos_;
  }
  if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
    size_t at = pos_ + 1;
    if (at < text_.size() && (text_[at] == '+' || text_[at] == '-')) ++at;
    if (digitsFollow(at)) {
      isFloat = true;
      pos_ = at;
      while (digitsFollow(pos_)) ++pos_;
    }
  }
  if (pos_ < text_.size() && isNameChar(text_[pos_])) {
    size_t end = pos_;
    while (end < text_.size() && isNameChar(text_[end])) ++end;
    return fail(begin, "malformed number '" + shown(text_.substr(begin, end - begin)) + "'");
  }
  Token t = make(isFloat ? Token::Float : Token::Integer, begin);
  const char *first = text_.data() + begin;
  const char *last = text_.data() + pos_;
  std::from_chars_result r;
  if (isFloat)
    r = std::from_chars(first, last, t.floatValue);
  else
    r = std::from_chars(first, last, t.intValue);
  if (r.ec != std::errc() || r.ptr != last)
    return fail(begin, std::string(isFloat ? "floating-point" : "integer") + " literal '" +
                           shown(t.spelling) + "' is out of range");
  return t;
}

bool TextLexer::notAName(size_t begin, Token &bad) {
  // A word that runs on into non-ASCII letters ("rélu") is one word that is not a name, said
  // whole at its start, not a name cut short before an unexpected byte.
  size_t end = pos_;
  bool nonAscii = false;
  while (end < text_.size() &&
         (isNameChar(text_[end]) || static_cast<unsigned char>(text_[end]) >= 0x80)) {
    nonAscii = nonAscii || static_cast<unsigned char>(text_[end]) >= 0x80;
    ++end;
  }
  std::string word(text_.substr(begin, end - begin));
  for (size_t i = 0; i < word.size();) {
    size_t n = utf8SequenceLength(word, i);
    if (n == 0) return false; // not UTF-8: reported as the byte it is
    i += n;
  }
  if (!nonAscii || word.size() < 2 || utf8SequenceLength(word, 0) == word.size()) return false;
  bad = fail(begin, "'" + word + "' is not a name: names in IR are ASCII letters, digits, '_' "
                               "and '.'");
  return true;
}

// string ::= '"' ([^"\\\n] | '\\' ["\\nr] | '\\x' hex hex)* '"'
Token TextLexer::lexString(size_t begin) {
  std::string value;
  ++pos_;
  while (pos_ < text_.size()) {
    char c = text_[pos_];
    if (c == '"') {
      ++pos_;
      Token t = make(Token::String, begin);
      t.str = std::move(value);
      return t;
    }
    if (c == '\n') break;
    if (c == '\\') {
      char e = pos_ + 1 < text_.size() ? text_[pos_ + 1] : '\0';
      if (e == 'n' || e == 'r') {
        value += e == 'n' ? '\n' : '\r';
        pos_ += 2;
        continue;
      }
      if (e == 'x') {
        auto hex = [](char h) {
          return h >= '0' && h <= '9' ? h - '0' : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                              : h >= 'a' && h <= 'f' ? h - 'a' + 10 : -1;
        };
        int hi = pos_ + 2 < text_.size() ? hex(text_[pos_ + 2]) : -1;
        int lo = pos_ + 3 < text_.size() ? hex(text_[pos_ + 3]) : -1;
        if (hi < 0 || lo < 0) return fail(pos_, "\\x in a string needs two hex digits");
        value += static_cast<char>(hi * 16 + lo);
        pos_ += 4;
        continue;
      }
      if (e != '"' && e != '\\') return fail(pos_, "unknown escape sequence in string");
      value += e;
      pos_ += 2;
      continue;
    }
    unsigned char u = static_cast<unsigned char>(c);
    if (u < 0x20 && c != '\t') return fail(pos_, "control character in string");
    value += c;
    ++pos_;
  }
  return fail(begin, "unterminated string");
}

// sigilName ::= ('%' | '@') [A-Za-z0-9_.]+
Token TextLexer::lexSigilName(size_t begin, Token::Kind k) {
  ++pos_;
  size_t nameBegin = pos_;
  while (pos_ < text_.size() && isNameChar(text_[pos_])) ++pos_;
  if (Token bad; pos_ > nameBegin && notAName(nameBegin, bad)) return bad;
  const char *what = k == Token::ValueRef ? "'%'" : "'@'";
  if (pos_ == nameBegin) return fail(begin, std::string("expected a name after ") + what);
  if (k == Token::ParamRef && !isAlpha(text_[nameBegin]))
    return fail(begin, "names after '@' must start with a letter or '_'");
  Token t = make(k, begin);
  t.str = std::string(text_.substr(nameBegin, pos_ - nameBegin));
  return t;
}

} // namespace dtnn::ir
