// Safetensors reader and writer. The writer emits compact JSON with sorted keys, padded with
// spaces so that the data starts 8-byte aligned. The reader does not trust the file: the
// header length is checked against a cap and the file size before anything is allocated, the
// header is parsed by a strict parser for exactly the schema safetensors uses, and the byte
// ranges of the tensors must tile the data exactly (no gaps, no overlaps, nothing after the
// last tensor) before any tensor is allocated, so memory stays bounded by the file size.
#include "runtime/Checkpoint.h"

#include "runtime/AtomicFile.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <string_view>
#include <utility>
#include <vector>

namespace dtnn::runtime {
namespace {

using ir::DType;

// Safetensors dtype names of the element types dtnn stores.
constexpr std::pair<DType, std::string_view> kDTypeNames[] = {
    {DType::F32, "F32"}, {DType::F64, "F64"}, {DType::I32, "I32"},
    {DType::I64, "I64"}, {DType::U8, "U8"},   {DType::Bool, "BOOL"},
};

// The most dimensions a stored tensor may have.
constexpr size_t kMaxRank = 64;

// The safetensors name of t, e.g. "F32".
std::string_view safetensorsName(DType t) {
  for (const auto &[type, name] : kDTypeNames)
    if (type == t)
      return name;
  return "?";
}

// The element type a safetensors dtype name stands for, if dtnn has it.
std::optional<DType> parseSafetensorsName(std::string_view s) {
  for (const auto &[type, name] : kDTypeNames)
    if (name == s)
      return type;
  return std::nullopt;
}

// The offset of the first byte of s that is not part of well-formed UTF-8 (no overlong forms,
// no surrogates, nothing above U+10FFFF), or nullopt if s is valid.
std::optional<size_t> invalidUtf8At(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    size_t len = c < 0x80             ? 1
                 : (c & 0xE0) == 0xC0 ? 2
                 : (c & 0xF0) == 0xE0 ? 3
                 : (c & 0xF8) == 0xF0 ? 4
                                      : 0;
    if (len == 0 || i + len > s.size())
      return i;
    uint32_t cp = len == 1 ? c : len == 2 ? c & 0x1F : len == 3 ? c & 0x0F : c & 0x07;
    for (size_t k = 1; k < len; ++k) {
      auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80)
        return i;
      cp = cp << 6 | (cc & 0x3F);
    }
    static constexpr uint32_t kMinForLength[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMinForLength[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
      return i;
    i += len;
  }
  return std::nullopt;
}

// Quotes s as a JSON string for an error message, shortened if long.
std::string quoted(std::string_view s) {
  constexpr size_t kMax = 80;
  return "'" + std::string(s.substr(0, kMax)) + (s.size() > kMax ? "...'" : "'");
}

// Text form of a byte range, e.g. "[0, 4096)".
std::string rangeStr(uint64_t begin, uint64_t end) {
  return "[" + std::to_string(begin) + ", " + std::to_string(end) + ")";
}

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

// Appends s to out as a JSON string literal. s must be valid UTF-8; it is written unescaped
// except for the quote, the backslash and control characters.
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

// Checks that a key or value of the header can be stored; what names it in the error.
Error checkText(std::string_view s, const std::string &what) {
  if (invalidUtf8At(s))
    return Error::make(what + " is not valid UTF-8");
  return Error::success();
}

// Appends the "__metadata__" entry.
Error appendMetadata(std::string &json, const std::map<std::string, std::string> &metadata) {
  json += "\"__metadata__\":{";
  bool first = true;
  for (const auto &[key, value] : metadata) {
    if (Error e = checkText(key, "metadata key " + quoted(key)))
      return e;
    if (Error e = checkText(value, "metadata value of " + quoted(key)))
      return e;
    if (!first)
      json += ',';
    first = false;
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

// The data holds the tensors grouped by element size, largest first, each group in name
// order. As the data starts 8-byte aligned, every tensor then starts at a multiple of its
// element size, which readers that map the file rather than copy it need.
constexpr unsigned kElementSizes[] = {8, 4, 2, 1};

// The JSON header of ckpt, padded with spaces to a multiple of 8 bytes. Keys are in sorted
// order, independent of the order of the data.
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

//===----------------------------------------------------------------------===//
// Header parsing
//===----------------------------------------------------------------------===//

// One tensor entry of a header.
struct Entry {
  std::string name;
  ir::TensorType type;
  uint64_t begin = 0, end = 0;
};

// A parsed header.
struct Header {
  std::map<std::string, std::string> metadata;
  std::vector<Entry> entries;
};

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

  // Parses the whole text into header; on failure returns the problem.
  Error parse(Header &header) {
    if (std::optional<size_t> at = invalidUtf8At(text_))
      return Error::make("header is not valid UTF-8 (byte " + std::to_string(*at) + ")");
    if (!parseHeader(header))
      return Error::make(error_);
    return Error::success();
  }

private:
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

  bool parseHex4(uint32_t &out);
  bool parseString(std::string &out);
  bool parseInteger(uint64_t &out);
  bool parseIntegers(std::vector<uint64_t> &out, size_t maxCount, const std::string &what);
  bool parseMetadata(std::map<std::string, std::string> &metadata);
  bool parseTensor(Entry &entry);
  bool parseHeader(Header &header);

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
  if (cp < 0x80) {
    out += char(cp);
  } else if (cp < 0x800) {
    out += char(0xC0 | cp >> 6);
    out += char(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += char(0xE0 | cp >> 12);
    out += char(0x80 | (cp >> 6 & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  } else {
    out += char(0xF0 | cp >> 18);
    out += char(0x80 | (cp >> 12 & 0x3F));
    out += char(0x80 | (cp >> 6 & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  }
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
  if (!expect('{'))
    return false;
  return parseList('}', [&] {
    std::string key, value;
    if (!parseString(key) || !expect(':'))
      return false;
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
  if (!expect('{'))
    return false;
  bool ok = parseList('}', [&] {
    std::string key;
    if (!parseString(key) || !expect(':'))
      return false;
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
    std::optional<DType> type = parseSafetensorsName(dtype);
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

bool HeaderParser::parseHeader(Header &header) {
  bool sawMetadata = false;
  std::set<std::string> names;
  if (!expect('{'))
    return false;
  bool ok = parseList('}', [&] {
    std::string key;
    if (!parseString(key) || !expect(':'))
      return false;
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

//===----------------------------------------------------------------------===//
// Layout checks and reading
//===----------------------------------------------------------------------===//

// Checks that each entry's byte range matches its type and that the ranges tile the
// dataBytes bytes of data exactly. Sorts entries by offset.
Error checkLayout(std::vector<Entry> &entries, uint64_t dataBytes) {
  for (const Entry &e : entries) {
    std::string what = "tensor " + quoted(e.name);
    if (e.begin > e.end)
      return Error::make(what + " has data_offsets [" + std::to_string(e.begin) + ", " +
                         std::to_string(e.end) + "] that end before they begin");
    uint64_t span = e.end - e.begin, size = ir::dtypeSize(e.type.dtype);
    uint64_t numel = uint64_t(numElements(e.type));
    if (span % size != 0 || span / size != numel)
      return Error::make(what + " has shape " + ir::dimsStr(e.type.dims) + " (" +
                         std::to_string(numel) + " elements of " +
                         std::string(safetensorsName(e.type.dtype)) + ") but its data_offsets " +
                         rangeStr(e.begin, e.end) + " span " + std::to_string(span) + " bytes");
  }
  std::stable_sort(entries.begin(), entries.end(), [](const Entry &a, const Entry &b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t covered = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    const Entry &e = entries[i];
    if (e.begin < covered)
      return Error::make("tensors " + quoted(entries[i - 1].name) + " and " + quoted(e.name) +
                         " overlap (bytes " + rangeStr(entries[i - 1].begin, entries[i - 1].end) +
                         " and " + rangeStr(e.begin, e.end) + ")");
    if (e.begin > covered)
      return Error::make("bytes " + rangeStr(covered, e.begin) +
                         " of the data belong to no tensor");
    covered = e.end;
  }
  for (const Entry &e : entries)
    if (e.end > dataBytes)
      return Error::make("truncated: tensor " + quoted(e.name) + " needs bytes " +
                         rangeStr(e.begin, e.end) + " but the data holds " +
                         std::to_string(dataBytes));
  if (covered < dataBytes)
    return Error::make("the data holds " + std::to_string(dataBytes) +
                       " bytes but the tensors use only " + std::to_string(covered));
  return Error::success();
}

// Closes a stream; for std::unique_ptr.
struct FileCloser {
  void operator()(std::FILE *f) const { std::fclose(f); }
};
using FilePtr = std::unique_ptr<std::FILE, FileCloser>;

// Reads exactly n bytes into out.
Error readExactly(std::FILE *file, void *out, size_t n) {
  if (n == 0 || std::fread(out, 1, n, file) == n)
    return Error::success();
  if (std::ferror(file))
    return Error::make(std::string("read failed: ") + std::strerror(errno));
  return Error::make("read failed: unexpected end of file");
}

// Reads the tensors of entries, sorted by offset, which follow each other in file.
Error readTensors(std::FILE *file, const std::vector<Entry> &entries, Checkpoint &ckpt) {
  for (const Entry &e : entries) {
    Tensor t(e.type);
    if (Error err = readExactly(file, t.raw(), t.bytes()))
      return err;
    if (e.type.dtype == DType::Bool) {
      const auto *bytes = static_cast<const uint8_t *>(t.raw());
      if (std::any_of(bytes, bytes + t.bytes(), [](uint8_t b) { return b > 1; }))
        return Error::make("tensor " + quoted(e.name) + " of dtype BOOL holds a byte that is " +
                           "neither 0 nor 1");
    }
    ckpt.tensors.emplace(e.name, std::move(t));
  }
  return Error::success();
}

// Opens path for reading if it is a regular file. O_NONBLOCK keeps a FIFO from blocking the
// open; it has no effect on reads of regular files.
Expected<FilePtr> openRegularFile(const std::string &path, uint64_t &size) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return Error::make(std::string("cannot open: ") + std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return Error::make(std::string("cannot stat: ") + std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return Error::make("not a regular file");
  }
  size = uint64_t(st.st_size);
  FilePtr file(::fdopen(fd, "rb"));
  if (!file) {
    int err = errno;
    ::close(fd);
    return Error::make(std::string("cannot open: ") + std::strerror(err));
  }
  return file;
}

// Loads path, returning errors without the path prefix.
Expected<Checkpoint> load(const std::string &path) {
  uint64_t fileSize = 0;
  Expected<FilePtr> file = openRegularFile(path, fileSize);
  if (!file)
    return file.takeError();
  if (fileSize < 8)
    return Error::make("not a safetensors file (" + std::to_string(fileSize) +
                       " bytes, too short for the 8-byte header length)");
  uint8_t lengthBytes[8];
  if (Error e = readExactly(file->get(), lengthBytes, 8))
    return e;
  uint64_t headerBytes = 0;
  for (int i = 7; i >= 0; --i)
    headerBytes = headerBytes << 8 | lengthBytes[i];
  if (headerBytes > fileSize - 8)
    return Error::make("not a safetensors file (header length " + std::to_string(headerBytes) +
                       " exceeds file size " + std::to_string(fileSize) + ")");
  if (headerBytes > kMaxCheckpointHeaderBytes)
    return Error::make("header length " + std::to_string(headerBytes) + " exceeds the limit of " +
                       std::to_string(kMaxCheckpointHeaderBytes));
  std::string text(headerBytes, '\0');
  if (Error e = readExactly(file->get(), text.data(), text.size()))
    return e;
  Header header;
  if (Error e = HeaderParser(text).parse(header))
    return e;
  if (Error e = checkLayout(header.entries, fileSize - 8 - headerBytes))
    return e;
  Checkpoint ckpt;
  ckpt.metadata = std::move(header.metadata);
  if (Error e = readTensors(file->get(), header.entries, ckpt))
    return e;
  return ckpt;
}

} // namespace

Error saveCheckpoint(const std::string &path, const Checkpoint &ckpt) {
  Expected<std::string> header = buildHeader(ckpt);
  if (!header)
    return Error::make(path + ": " + header.error().message());
  return writeFileAtomically(path, [&](std::FILE *file) {
    uint8_t length[8];
    for (int i = 0; i < 8; ++i)
      length[i] = uint8_t(uint64_t(header->size()) >> (8 * i));
    if (std::fwrite(length, 1, 8, file) != 8 ||
        std::fwrite(header->data(), 1, header->size(), file) != header->size())
      return false;
    for (unsigned size : kElementSizes)
      for (const auto &[name, t] : ckpt.tensors)
        if (ir::dtypeSize(t.type().dtype) == size && t.bytes() &&
            std::fwrite(t.raw(), 1, t.bytes(), file) != t.bytes())
          return false;
    return true;
  });
}

Expected<Checkpoint> loadCheckpoint(const std::string &path) {
  Expected<Checkpoint> ckpt = load(path);
  if (!ckpt)
    return Error::make(path + ": " + ckpt.error().message());
  return ckpt;
}

} // namespace dtnn::runtime
