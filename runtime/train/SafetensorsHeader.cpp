// The safetensors JSON header: writing it from a checkpoint and parsing it back. The parser
// accepts exactly the schema safetensors uses, so a hostile header fails with a message instead
// of building unbounded structures.
#include "runtime/train/SafetensorsHeader.h"

#include "ir/Diagnostics.h"

#include <cstdio>
#include <limits>
#include <optional>
#include <set>
#include <utility>

namespace dtnn::runtime::safetensors {
namespace {

using ir::DType;

// Safetensors dtype names of the element types dtnn stores.
constexpr std::pair<DType, std::string_view> kDTypeNames[] = {
    {DType::F32, "F32"}, {DType::F64, "F64"}, {DType::I32, "I32"},
    {DType::I64, "I64"}, {DType::U8, "U8"},   {DType::Bool, "BOOL"},
};

// The most dimensions a stored tensor may have.
constexpr size_t kMaxRank = 64;

// The element type a safetensors dtype name stands for, if dtnn has it.
std::optional<DType> parseDTypeName(std::string_view s) {
  for (const auto &[type, name] : kDTypeNames)
    if (name == s)
      return type;
  return std::nullopt;
}

// The offset of the first byte of s that is not part of well-formed UTF-8, or nullopt if s is
// valid.
std::optional<size_t> invalidUtf8At(const std::string &s) {
  for (size_t i = 0; i < s.size();) {
    size_t len = utf8SequenceLength(s, i);
    if (len == 0)
      return i;
    i += len;
  }
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//


// Checks that a key or value of the header can be stored; what names it in the error.
Error checkText(const std::string &s, const std::string &what) {
  if (invalidUtf8At(s))
    return Error::make(what + " is not valid UTF-8");
  return Error::success();
}

// Appends the "__metadata__" entry.
Error appendMetadata(std::string &json, const std::map<std::string, std::string> &metadata) {
  json += "\"__metadata__\":{";
  for (const auto &[key, value] : metadata) {
    if (Error e = checkText(key, "metadata key " + quoted(key)))
      return e;
    if (Error e = checkText(value, "metadata value of " + quoted(key)))
      return e;
    if (json.back() != '{')
      json += ',';
    appendJsonString(json, key);
    json += ':';
    appendJsonString(json, value);
  }
  json += '}';
  return Error::success();
}

// Checks that the tensor name can be stored.
Error checkTensor(const std::string &name, const Tensor &t) {
  if (name == "__metadata__")
    return Error::make("'__metadata__' is reserved and cannot name a tensor");
  if (Error e = checkText(name, "tensor name " + quoted(name)))
    return e;
  if (!t.type().isStatic())
    return Error::make("tensor " + quoted(name) + " has the dynamic type " + t.type().str());
  if (!t.raw() && t.bytes() != 0)
    return Error::make("tensor " + quoted(name) + " has no storage");
  return Error::success();
}

// Appends the entry of one tensor whose data starts at offset, and advances offset past it.
void appendTensor(std::string &json, const std::string &name, const Tensor &t, uint64_t &offset) {
  appendJsonString(json, name);
  json += ":{\"dtype\":\"";
  json += safetensorsName(t.type().dtype);
  json += "\",\"shape\":[";
  for (size_t i = 0; i < t.type().dims.size(); ++i)
    json += (i ? "," : "") + std::to_string(t.type().dims[i]);
  uint64_t end = offset + t.bytes();
  json += "],\"data_offsets\":[" + std::to_string(offset) + "," + std::to_string(end) + "]}";
  offset = end;
}

//===----------------------------------------------------------------------===//
// Parsing
//===----------------------------------------------------------------------===//

// A strict recursive-descent parser for the safetensors header schema, which is the only JSON
// it accepts:
//   header   ::= '{' (member (',' member)*)? '}'
//   member   ::= '"__metadata__"' ':' (metadata | 'null') | string ':' tensor
//   metadata ::= '{' (string ':' string (',' string ':' string)*)? '}'
//   tensor   ::= '{' field (',' field)* '}'   with each of dtype, shape, data_offsets once
//   field    ::= '"dtype"' ':' string | '"shape"' ':' ints | '"data_offsets"' ':' ints
//   ints     ::= '[' (integer (',' integer)*)? ']'
// Nesting is fixed by the schema, so the parser needs no depth limit.
class HeaderParser {
public:
  explicit HeaderParser(std::string_view text) : text_(text) {}

  // Parses the whole text, known to be valid UTF-8, into header.
  Error parseHeader(Header &header) {
    if (parseAll(header)) return Error::success();
    return Error::make(error_);
  }

private:
  // The parser's steps return false after recording the failure in error_.
  bool parseAll(Header &header);
  // Records msg at the current position and returns false.
  bool fail(const std::string &msg) {
    error_ = "invalid header JSON at byte " + std::to_string(pos_) + ": " + msg;
    return false;
  }
  // Records a problem with the meaning of a well-formed header and returns false.
  bool failSchema(const std::string &msg) {
    error_ = msg;
    return false;
  }

  void skipSpace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\n' || text_[pos_] == '\r'))
      ++pos_;
  }
  // Skips space and consumes c if it comes next.
  bool accept(char c) {
    skipSpace();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool expect(char c) { return accept(c) || fail(std::string("expected '") + c + "'"); }
  // Parses the rest of a list after its opening bracket: element() for each item, separated
  // by commas, up to close.
  template <typename F> bool parseList(char close, F element) {
    if (accept(close))
      return true;
    do {
      if (!element())
        return false;
    } while (accept(','));
    return expect(close);
  }
  // Parses an object with string keys after skipping space: member(key) parses the value that
  // follows each key and its colon.
  template <typename F> bool parseObject(F member) {
    if (!expect('{'))
      return false;
    return parseList('}', [&] {
      std::string key;
      return parseString(key) && expect(':') && member(key);
    });
  }

  bool parseHex4(uint32_t &out);
  bool parseString(std::string &out);
  bool parseInteger(uint64_t &out);
  bool parseIntegers(std::vector<uint64_t> &out, size_t maxCount, const std::string &what);
  bool parseMetadata(std::map<std::string, std::string> &metadata);
  bool parseTensor(Entry &entry);

  std::string_view text_;
  size_t pos_ = 0;
  std::string error_;
};

bool HeaderParser::parseHex4(uint32_t &out) {
  out = 0;
  for (int i = 0; i < 4; ++i, ++pos_) {
    char c = pos_ < text_.size() ? text_[pos_] : '\0';
    int digit = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
    if (digit < 0)
      return fail("expected four hex digits after \\u");
    out = out << 4 | uint32_t(digit);
  }
  return true;
}

// Appends the UTF-8 encoding of code point cp to out.
void appendUtf8(std::string &out, uint32_t cp) {
  static constexpr unsigned kLeadBits[] = {0x00, 0xC0, 0xE0, 0xF0};
  int extra = cp < 0x80 ? 0 : cp < 0x800 ? 1 : cp < 0x10000 ? 2 : 3;
  out += char(kLeadBits[extra] | cp >> (6 * extra));
  for (int i = extra - 1; i >= 0; --i)
    out += char(0x80 | (cp >> (6 * i) & 0x3F));
}

// string ::= '"' (char | escape)* '"'; the text is already known to be valid UTF-8.
bool HeaderParser::parseString(std::string &out) {
  out.clear();
  if (!expect('"'))
    return false;
  while (true) {
    if (pos_ >= text_.size())
      return fail("unterminated string");
    char c = text_[pos_];
    if (c == '"') {
      ++pos_;
      return true;
    }
    if (static_cast<unsigned char>(c) < 0x20)
      return fail("control character in string");
    ++pos_;
    if (c != '\\') {
      out += c;
      continue;
    }
    char esc = pos_ < text_.size() ? text_[pos_++] : '\0';
    switch (esc) {
    case '"': case '\\': case '/': out += esc; break;
    case 'b': out += '\b'; break;
    case 'f': out += '\f'; break;
    case 'n': out += '\n'; break;
    case 'r': out += '\r'; break;
    case 't': out += '\t'; break;
    case 'u': {
      uint32_t cp, low;
      if (!parseHex4(cp))
        return false;
      if (cp >= 0xDC00 && cp <= 0xDFFF)
        return fail("unpaired surrogate in \\u escape");
      if (cp >= 0xD800 && cp <= 0xDBFF) {
        if (text_.substr(pos_, 2) != "\\u")
          return fail("unpaired surrogate in \\u escape");
        pos_ += 2;
        if (!parseHex4(low))
          return false;
        if (low < 0xDC00 || low > 0xDFFF)
          return fail("unpaired surrogate in \\u escape");
        cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
      }
      appendUtf8(out, cp);
      break;
    }
    default:
      --pos_;
      return fail("invalid escape in string");
    }
  }
}

// integer ::= '0' | [1-9][0-9]*, at most 2^64 - 1. Signs, fractions and exponents are errors.
bool HeaderParser::parseInteger(uint64_t &out) {
  skipSpace();
  auto isDigit = [&](size_t i) { return i < text_.size() && text_[i] >= '0' && text_[i] <= '9'; };
  if (pos_ < text_.size() && text_[pos_] == '-')
    return fail("expected a non-negative integer");
  if (!isDigit(pos_))
    return fail("expected an integer");
  if (text_[pos_] == '0' && isDigit(pos_ + 1))
    return fail("integer with a leading zero");
  out = 0;
  for (; isDigit(pos_); ++pos_) {
    unsigned digit = unsigned(text_[pos_] - '0');
    if (out > (std::numeric_limits<uint64_t>::max() - digit) / 10)
      return fail("integer too large");
    out = out * 10 + digit;
  }
  if (pos_ < text_.size() && (text_[pos_] == '.' || text_[pos_] == 'e' || text_[pos_] == 'E'))
    return fail("expected an integer");
  return true;
}

bool HeaderParser::parseIntegers(std::vector<uint64_t> &out, size_t maxCount,
                                 const std::string &what) {
  out.clear();
  if (!expect('['))
    return false;
  return parseList(']', [&] {
    if (out.size() == maxCount)
      return fail(what + " has more than " + std::to_string(maxCount) + " elements");
    out.push_back(0);
    return parseInteger(out.back());
  });
}

bool HeaderParser::parseMetadata(std::map<std::string, std::string> &metadata) {
  skipSpace();
  if (text_.substr(pos_, 4) == "null") {
    pos_ += 4;
    return true;
  }
  return parseObject([&](const std::string &key) {
    std::string value;
    skipSpace();
    if (pos_ < text_.size() && text_[pos_] != '"')
      return fail("metadata value of " + quoted(key) + " is not a string");
    if (!parseString(value))
      return false;
    if (!metadata.try_emplace(key, std::move(value)).second)
      return failSchema("duplicate metadata key " + quoted(key));
    return true;
  });
}

bool HeaderParser::parseTensor(Entry &entry) {
  const std::string what = "tensor " + quoted(entry.name);
  bool haveDType = false, haveShape = false, haveOffsets = false;
  std::vector<uint64_t> shape, offsets;
  bool ok = parseObject([&](const std::string &key) {
    bool *seen = key == "dtype" ? &haveDType
                 : key == "shape" ? &haveShape
                 : key == "data_offsets" ? &haveOffsets
                                         : nullptr;
    if (!seen)
      return failSchema(what + " has an unknown field " + quoted(key));
    if (*seen)
      return failSchema(what + " has the field " + quoted(key) + " twice");
    *seen = true;
    if (key == "shape")
      return parseIntegers(shape, kMaxRank, "the shape of " + what);
    if (key == "data_offsets")
      return parseIntegers(offsets, 2, "data_offsets of " + what);
    std::string dtype;
    if (!parseString(dtype))
      return false;
    std::optional<DType> type = parseDTypeName(dtype);
    if (!type)
      return failSchema(what + " has the unsupported dtype " + quoted(dtype));
    entry.type.dtype = *type;
    return true;
  });
  if (!ok)
    return false;
  for (auto [have, field] : {std::pair{haveDType, "dtype"}, std::pair{haveShape, "shape"},
                             std::pair{haveOffsets, "data_offsets"}})
    if (!have)
      return failSchema(what + " lacks the field '" + field + "'");
  if (offsets.size() != 2)
    return failSchema("data_offsets of " + what + " must hold two integers");
  entry.begin = offsets[0];
  entry.end = offsets[1];
  // Bound the product of the nonzero sizes so that every element count fits in int64_t.
  uint64_t product = 1;
  for (uint64_t d : shape) {
    if (d != 0 && product > uint64_t(std::numeric_limits<int64_t>::max()) / d)
      return failSchema("the shape of " + what + " has too many elements");
    product *= d ? d : 1;
    entry.type.dims.push_back(int64_t(d));
  }
  return true;
}

bool HeaderParser::parseAll(Header &header) {
  bool sawMetadata = false;
  std::set<std::string> names;
  bool ok = parseObject([&](const std::string &key) {
    if (key == "__metadata__") {
      if (sawMetadata)
        return failSchema("duplicate key '__metadata__'");
      sawMetadata = true;
      return parseMetadata(header.metadata);
    }
    if (!names.insert(key).second)
      return failSchema("duplicate tensor " + quoted(key));
    header.entries.push_back(Entry{key, {}, 0, 0});
    return parseTensor(header.entries.back());
  });
  if (!ok)
    return false;
  skipSpace();
  if (pos_ != text_.size())
    return fail("unexpected characters after the header object");
  return true;
}

} // namespace

std::string_view safetensorsName(DType t) {
  for (const auto &[type, name] : kDTypeNames)
    if (type == t)
      return name;
  return "?";
}

void appendJsonString(std::string &out, std::string_view s) {
  out += '"';
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    switch (c) {
    case '"': out += "\\\""; break;
    case '\\': out += "\\\\"; break;
    case '\n': out += "\\n"; break;
    case '\r': out += "\\r"; break;
    case '\t': out += "\\t"; break;
    case '\b': out += "\\b"; break;
    case '\f': out += "\\f"; break;
    default:
      if (c < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof(buf), "\\u%04x", c);
        out += buf;
      } else {
        out += ch;
      }
    }
  }
  out += '"';
}

std::string quoted(std::string_view s) {
  constexpr size_t kMax = 80;
  return "'" + std::string(s.substr(0, kMax)) + (s.size() > kMax ? "...'" : "'");
}

Expected<std::string> buildHeader(const Checkpoint &ckpt) {
  std::string json = "{";
  if (!ckpt.metadata.empty())
    if (Error e = appendMetadata(json, ckpt.metadata))
      return e;
  // next[s] is the offset of the next tensor with element size s.
  uint64_t next[9] = {};
  for (const auto &[name, tensor] : ckpt.tensors) {
    if (Error e = checkTensor(name, tensor))
      return e;
    next[ir::dtypeSize(tensor.type().dtype)] += tensor.bytes();
  }
  uint64_t offset = 0;
  for (unsigned size : kElementSizes)
    offset += std::exchange(next[size], offset);
  for (const auto &[name, tensor] : ckpt.tensors) {
    if (json.size() > 1)
      json += ',';
    appendTensor(json, name, tensor, next[ir::dtypeSize(tensor.type().dtype)]);
  }
  json += '}';
  json.append((8 - json.size() % 8) % 8, ' ');
  return json;
}

Expected<Header> parseHeader(const std::string &text) {
  if (std::optional<size_t> at = invalidUtf8At(text))
    return Error::make("header is not valid UTF-8 (byte " + std::to_string(*at) + ")");
  Header header;
  HeaderParser parser(text);
  if (Error e = parser.parseHeader(header)) return e;
  return header;
}

} // namespace dtnn::runtime::safetensors
