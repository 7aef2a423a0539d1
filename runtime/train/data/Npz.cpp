// .npz reader. The zip archive (Zip.cpp) is parsed by hand: the end-of-central-directory record is
// searched for backwards over the last 64 KiB + 22 bytes (the most a comment can push it back), the
// zip64 end record is read through its locator when there is one, then the central directory, then
// the member's local header, whose own name and extra lengths give where its data starts. The sizes
// and CRC-32 come from the central directory, widened by the zip64 extra field (id 0x0001) where
// they read 0xFFFFFFFF. A member is read as a stream, stored bytes straight from the file or
// deflated ones through zlib's raw inflate, into the caller's buffer: first the .npy header (a
// Python dict literal giving descr, fortran_order and shape), then exactly the data that header
// promises, into the array's own storage, then the CRC and the end of the stream are checked. Every
// size is checked against the file, the deflate ratio and the machine's memory before it is used,
// so a corrupt or hostile file fails with a message instead of a crash or a huge allocation.
#include "runtime/train/data/Npz.h"

#include "runtime/HostMemory.h"
#include "runtime/train/data/Zip.h"

#include <algorithm>
#include <bit>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

namespace dtnn {
namespace {

using zip::Archive;
using zip::arrayNames;
using zip::le;
using zip::locateData;
using zip::Member;
using zip::MemberReader;
using zip::openArchive;

constexpr uint64_t kMaxNpyHeader = 1 << 16;

// A NumPy type string split up: byte order, kind and item size.
struct DType {
  char order = 0, kind = 0;
  uint64_t size = 0;
  bool isInt() const { return kind == 'i' || kind == 'u'; }
};

// Parses and checks a type string: little-endian (or one-byte) bool, integer, float or complex.
// The error says why, without a file name.
Expected<DType> parseDType(const std::string &s) {
  DType t;
  size_t digits = s.find_first_of("0123456789");
  if (s.size() >= 2 && std::strchr("<>|=", s[0])) t.order = s[0], t.kind = s[1];
  if (digits == 2 && s.size() <= 4 && s.find_first_not_of("0123456789", 2) == std::string::npos)
    t.size = std::stoul(s.substr(2));
  if (t.kind == 'O')
    return Error::make("holds Python objects (type '" + s + "'), which only pickle can read");
  bool known = (t.kind == 'b' && t.size == 1) ||
               (t.kind == 'f' && (t.size == 2 || t.size == 4 || t.size == 8)) ||
               (t.kind == 'c' && (t.size == 8 || t.size == 16)) ||
               (t.isInt() && (t.size == 1 || t.size == 2 || t.size == 4 || t.size == 8));
  if (!known)
    return Error::make("has type '" + s +
                       "', which is not supported (only bool, integer, float and complex arrays "
                       "are)");
  bool nativeBig = std::endian::native == std::endian::big;
  if (t.size > 1 && (t.order == '>' || (t.order != '<' && nativeBig)))
    return Error::make("is big-endian (type '" + s + "'); only little-endian arrays are read");
  t.order = t.size == 1 ? '|' : '<';
  return t;
}

// The parsed dict of a .npy header.
struct NpyHeader {
  std::string descr;
  bool fortran = false;
  std::vector<int64_t> shape;
};

// A parser of the Python dict literal of a .npy header, whitespace and key order free:
//   header := '{' (key ':' value ',')* [key ':' value] '}'
//   value  := string | 'True' | 'False' | '(' [int (',' int)* [',']] ')'
class HeaderParser {
  static constexpr const char *kKeys[3] = {"descr", "fortran_order", "shape"};

public:
  explicit HeaderParser(const std::string &text) : s_(text) {}

  Expected<NpyHeader> parse() {
    NpyHeader h;
    bool seen[3] = {};
    if (!eat('{')) return fail("expected '{'");
    while (!eat('}')) {
      std::string key;
      if (Error e = string(key)) return e;
      if (!eat(':')) return fail("expected ':' after '" + key + "'");
      skipSpace();
      if (key == "descr" && peek() == '[')
        return fail("a structured type (a list of fields) is not supported");
      Error e = key == "descr"           ? string(h.descr)
                : key == "fortran_order" ? boolean(h.fortran)
                : key == "shape"         ? shape(h.shape)
                                         : fail("unexpected key '" + key + "'");
      if (e) return e;
      seen[std::find(kKeys, kKeys + 3, key) - kKeys] = true;
      if (!eat(',') && (skipSpace(), peek() != '}')) return fail("expected ',' or '}'");
    }
    skipSpace();
    if (i_ != s_.size()) return fail("unexpected text after '}'");
    for (int k = 0; k < 3; ++k)
      if (!seen[k]) return fail(std::string("no '") + kKeys[k] + "' key");
    return h;
  }

private:
  Error fail(const std::string &why) const {
    return Error::make(why + " at byte " + std::to_string(i_));
  }
  void skipSpace() {
    while (i_ < s_.size() && std::strchr(" \t\n\r\f\v", s_[i_]) && s_[i_]) ++i_;
  }
  char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  // Skips spaces, then c if it is next; returns whether it was.
  bool eat(char c) {
    skipSpace();
    if (peek() != c) return false;
    ++i_;
    return true;
  }
  // A string in single or double quotes, without escapes (a type string never has them).
  Error string(std::string &out) {
    skipSpace();
    char q = peek();
    if (q != '\'' && q != '"') return fail("expected a string");
    size_t close = s_.find(q, i_ + 1);
    if (close == std::string::npos || s_.find('\\', i_) < close)
      return fail("unterminated or escaped string");
    out = s_.substr(i_ + 1, close - i_ - 1);
    i_ = close + 1;
    return Error::success();
  }
  Error boolean(bool &out) {
    skipSpace();
    for (bool v : {true, false}) {
      const char *word = v ? "True" : "False";
      if (s_.compare(i_, std::strlen(word), word) == 0) {
        i_ += std::strlen(word);
        out = v;
        return Error::success();
      }
    }
    return fail("expected True or False");
  }
  // A tuple of non-negative integers; a Python 2 'L' suffix is allowed.
  Error shape(std::vector<int64_t> &out) {
    out.clear();
    if (!eat('(')) return fail("expected a tuple for the shape");
    bool comma = true;
    while (!eat(')')) {
      skipSpace();
      if (!comma || !std::isdigit(uint8_t(peek()))) return fail("expected a dimension");
      int64_t v = 0;
      while (std::isdigit(uint8_t(peek())))
        if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, s_[i_++] - '0', &v))
          return fail("dimension too large");
      if (peek() == 'L') ++i_;
      out.push_back(v);
      comma = eat(',');
    }
    if (out.size() == 1 && !comma)
      return fail("a one-dimensional shape needs a trailing comma, (N,)");
    return Error::success();
  }

  const std::string &s_;
  size_t i_ = 0;
};

// "(4, 3, 5, 5)" as NumPy prints a shape.
std::string shapeText(const std::vector<int64_t> &shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

// Reads the .npy header at the start of a member of `size` bytes: its dtype and shape, checked
// against each other and the size. Sets dataBytes to the size of the data that follows.
Expected<NpyArray> readNpyHeader(MemberReader &r, uint64_t size, uint64_t &dataBytes) {
  uint8_t prefix[12];
  if (size < 10) return r.fail("is not a .npy array (it has " + std::to_string(size) + " bytes)");
  if (Error e = r.read(prefix, 8)) return e;
  if (std::memcmp(prefix, "\x93NUMPY", 6) != 0)
    return r.fail("is not a .npy array (no \\x93NUMPY magic)");
  int major = prefix[6], minor = prefix[7];
  if (major < 1 || major > 3 || minor != 0)
    return r.fail("has .npy format version " + std::to_string(major) + "." + std::to_string(minor) +
                  "; versions 1.0, 2.0 and 3.0 are read");
  int lenBytes = major == 1 ? 2 : 4;
  if (size < 8 + uint64_t(lenBytes)) return r.fail("is truncated (in its .npy header)");
  if (Error e = r.read(prefix + 8, lenBytes)) return e;
  uint64_t headerLen = le(prefix + 8, lenBytes), start = 8 + lenBytes;
  if (headerLen > kMaxNpyHeader)
    return r.fail("has a .npy header of " + std::to_string(headerLen) + " bytes, more than " +
                  std::to_string(kMaxNpyHeader));
  if (size - start < headerLen) return r.fail("is truncated (in its .npy header)");
  std::string text(headerLen, '\0');
  if (Error e = r.read(reinterpret_cast<uint8_t *>(text.data()), headerLen)) return e;
  Expected<NpyHeader> h = HeaderParser(text).parse();
  if (!h) return r.fail("has a malformed .npy header: " + h.error().message());
  Expected<DType> t = parseDType(h->descr);
  if (!t) return r.fail(t.error().message());
  if (h->fortran)
    return r.fail("is Fortran-ordered (fortran_order True); only C-ordered arrays are read");
  NpyArray a;
  a.dtype = t->order + std::string(1, t->kind) + std::to_string(t->size);
  a.shape = h->shape;
  uint64_t need = t->size;
  bool over = false;
  for (int64_t d : a.shape) over = over || __builtin_mul_overflow(need, uint64_t(d), &need);
  dataBytes = size - start - headerLen;
  if (over || need != dataBytes)
    return r.fail("holds " + std::to_string(dataBytes) + " bytes of data but its shape " +
                  shapeText(a.shape) + " of type '" + a.dtype + "' needs " +
                  (over ? std::string("over 2^64") : std::to_string(need)));
  return a;
}

// Reads array `name` of the archive at path: its header, and its data when withData.
Expected<NpyArray> readMember(const std::string &path, const std::string &name, bool withData) {
  Expected<Archive> a = openArchive(path);
  if (!a) return a.takeError();
  const Member *m = nullptr;
  // Python's zipfile lets the last of several entries of one name win; so does this.
  for (const Member &each : a->members)
    if (each.name == name + ".npy") m = &each;
  if (!m) return a->fail("has no array '" + name + "' (it holds: " + arrayNames(*a) + ")");
  Expected<uint64_t> offset = locateData(*a, *m);
  if (!offset) return offset.takeError();
  MemberReader r(*a, *m);
  if (Error e = r.start(*offset)) return e;
  uint64_t dataBytes = 0;
  Expected<NpyArray> array = readNpyHeader(r, m->size, dataBytes);
  if (!array || !withData) return array;
  uint64_t memory = runtime::hostMemoryBytes();
  if (dataBytes > memory)
    return r.fail("holds " + std::to_string(dataBytes) + " bytes, more than the " +
                  runtime::formatBytes(memory) + " of memory");
  array->data.resize(size_t(dataBytes));
  if (Error e = r.read(array->data.data(), dataBytes)) return e;
  if (Error e = r.finish()) return e;
  return array;
}

// Half-precision bits as a double.
double halfToDouble(uint16_t h) {
  int exp = (h >> 10) & 0x1F;
  double mant = h & 0x3FF;
  double v = exp == 0    ? std::ldexp(mant, -24)
             : exp == 31 ? (mant ? std::nan("") : HUGE_VAL)
                         : std::ldexp(mant + 1024, exp - 25);
  return (h & 0x8000) ? -v : v;
}

// Element i of a numeric array as a double (exact for 0 and 1, which is all one-hot needs).
double numberAt(const NpyArray &a, const DType &t, uint64_t i) {
  const uint8_t *p = a.data.data() + i * t.size;
  if (t.kind == 'f' && t.size == 2) return halfToDouble(uint16_t(le(p, 2)));
  if (t.kind == 'f' && t.size == 4) {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  if (t.kind == 'f') {
    double d;
    std::memcpy(&d, p, 8);
    return d;
  }
  uint64_t bits = le(p, int(t.size));
  if (t.kind == 'i' && t.size < 8 && (bits >> (8 * t.size - 1)))
    bits |= ~uint64_t(0) << (8 * t.size); // sign-extend
  return t.kind == 'i' ? double(int64_t(bits)) : double(bits);
}

// Element i of an integer array, exactly.
__int128 integerAt(const NpyArray &a, const DType &t, uint64_t i) {
  uint64_t bits = le(a.data.data() + i * t.size, int(t.size));
  if (t.kind == 'u') return bits;
  if (t.size < 8 && (bits >> (8 * t.size - 1))) bits |= ~uint64_t(0) << (8 * t.size);
  return int64_t(bits);
}

// The decimal digits of v.
std::string text(__int128 v) {
  unsigned __int128 u = v < 0 ? -(unsigned __int128)v : v;
  std::string digits;
  do {
    digits.insert(digits.begin(), char('0' + int(u % 10)));
  } while (u /= 10);
  return (v < 0 ? "-" : "") + digits;
}

// Appends label v of sample i less offset, or fails if that is not an int32 class number.
Error pushLabel(std::vector<int32_t> &out, __int128 v, uint64_t i, int64_t offset) {
  __int128 r = v - offset;
  if (r < 0 || r > std::numeric_limits<int32_t>::max()) {
    return Error::make("label " + text(v) + " at index " + std::to_string(i) +
                       " minus the offset " + std::to_string(offset) + " is " + text(r) +
                       ", not a class number (0.." +
                       std::to_string(std::numeric_limits<int32_t>::max()) + ")");
  }
  out.push_back(int32_t(r));
  return Error::success();
}

} // namespace

int64_t NpyArray::numel() const {
  int64_t n = 1;
  for (int64_t d : shape)
    if (__builtin_mul_overflow(n, d, &n)) return std::numeric_limits<int64_t>::max();
  return n;
}

Expected<NpyArray> readNpzArray(const std::string &path, const std::string &name) {
  return readMember(path, name, true);
}

Expected<NpyArray> readNpzHeader(const std::string &path, const std::string &name) {
  return readMember(path, name, false);
}

Expected<std::vector<int32_t>> npyLabels(const NpyArray &a, int64_t offset) {
  Expected<DType> t = parseDType(a.dtype);
  if (!t) return Error::make("the labels' array " + t.error().message());
  uint64_t count = 1;
  bool over = false;
  for (int64_t d : a.shape)
    over = over || d < 0 || __builtin_mul_overflow(count, uint64_t(d), &count);
  if (over || count > a.data.size() / t->size || count * t->size != a.data.size())
    return Error::make("the labels' " + std::to_string(a.data.size()) +
                       " bytes do not match their shape " + shapeText(a.shape) + " and type '" +
                       a.dtype + "'");
  std::vector<int32_t> labels;
  size_t rank = a.shape.size();
  if (t->isInt() && (rank == 1 || (rank == 2 && a.shape[1] == 1))) {
    labels.reserve(count);
    for (uint64_t i = 0; i < count; ++i)
      if (Error e = pushLabel(labels, integerAt(a, *t, i), i, offset)) return e;
    return labels;
  }
  if (rank != 2 || t->kind == 'c')
    return Error::make("the labels have shape " + shapeText(a.shape) + " and type '" + a.dtype +
                       "': labels are integers of shape (N,) or (N, 1), or one-hot rows (N, C)");
  uint64_t rows = uint64_t(a.shape[0]), cols = uint64_t(a.shape[1]);
  labels.reserve(rows);
  for (uint64_t r = 0; r < rows; ++r) {
    uint64_t ones = 0, hot = 0;
    for (uint64_t c = 0; c < cols; ++c) {
      double v = numberAt(a, *t, r * cols + c);
      if (v != 0 && v != 1)
        return Error::make("row " + std::to_string(r) + " of the labels is not one-hot (column " +
                           std::to_string(c) + " holds " + std::to_string(v) + ")");
      if (v == 1) ++ones, hot = c;
    }
    if (ones != 1)
      return Error::make("row " + std::to_string(r) + " of the labels is not one-hot (it has " +
                         std::to_string(ones) + " ones)");
    if (Error e = pushLabel(labels, hot, r, offset)) return e;
  }
  return labels;
}

} // namespace dtnn
