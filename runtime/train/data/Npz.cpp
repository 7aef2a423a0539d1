// .npz reader. The zip archive is parsed by hand: the end-of-central-directory record is searched
// for backwards over the last 64 KiB + 22 bytes (the most a comment can push it back), the zip64
// end record is read through its locator when there is one, then the central directory, then the
// member's local header, whose own name and extra lengths give where its data starts. The sizes
// and CRC-32 come from the central directory, widened by the zip64 extra field (id 0x0001) where
// they read 0xFFFFFFFF. A member is read as a stream, stored bytes straight from the file or
// deflated ones through zlib's raw inflate, into the caller's buffer: first the .npy header (a
// Python dict literal giving descr, fortran_order and shape), then exactly the data that header
// promises, into the array's own storage, then the CRC and the end of the stream are checked.
// Every size is checked against the file, the deflate ratio and the machine's memory before it
// is used, so a corrupt or hostile file fails with a message instead of a crash or a huge
// allocation.
#include "runtime/train/data/Npz.h"

#include "ir/Files.h"
#include "runtime/HostMemory.h"

#include <sys/types.h>
#include <zlib.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

namespace dtnn {
namespace {

constexpr uint32_t kLocalSig = 0x04034b50, kCentralSig = 0x02014b50, kEndSig = 0x06054b50;
constexpr uint32_t kEnd64Sig = 0x06064b50, kLocatorSig = 0x07064b50;
constexpr uint64_t kEndSize = 22, kLocatorSize = 20, kEnd64Size = 56;
constexpr uint64_t kCentralSize = 46, kLocalSize = 30, kMaxComment = 0xFFFF;
constexpr uint64_t kMaxDeflateRatio = 1032; // deflate's longest match, 258 bytes, in 2 bits
constexpr uint64_t kMaxNpyHeader = 1 << 16;
constexpr size_t kInputChunk = 1 << 16;

// The little-endian unsigned number of n bytes at p.
uint64_t le(const uint8_t *p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = v << 8 | p[i];
  return v;
}

// One member as the central directory describes it.
struct Member {
  std::string name;
  uint16_t flags = 0, method = 0;
  uint32_t crc = 0;
  uint64_t compressedSize = 0, size = 0, localOffset = 0;
};

// An open .npz file and its central directory.
struct Archive {
  std::string path;
  FilePtr file;
  uint64_t size = 0;
  std::vector<Member> members;

  Error fail(const std::string &why) const { return Error::make(path + ": " + why); }
  Error corrupt(const std::string &why) const { return fail("corrupt zip archive (" + why + ")"); }
  // Reads n bytes at offset, which the caller has checked lie inside the file.
  Error readAt(uint64_t offset, void *dst, size_t n) const {
    if (::fseeko(file.get(), off_t(offset), SEEK_SET) != 0 ||
        std::fread(dst, 1, n, file.get()) != n)
      return fail("read error at offset " + std::to_string(offset));
    return Error::success();
  }
};

// Widens the fields of m that read 0xFFFFFFFF from the zip64 extra field in extra[0, len): the
// 8-byte sizes and offset it holds, in that order, for those fields only.
Error applyZip64(const Archive &a, const uint8_t *extra, uint64_t len, Member &m) {
  uint64_t *fields[] = {&m.size, &m.compressedSize, &m.localOffset};
  bool needed = false;
  for (uint64_t *f : fields) needed = needed || *f == 0xFFFFFFFF;
  if (!needed) return Error::success();
  for (uint64_t k = 0; k + 4 <= len;) {
    uint64_t id = le(extra + k, 2), size = le(extra + k + 2, 2);
    if (k + 4 + size > len) break;
    if (id == 0x0001) {
      const uint8_t *p = extra + k + 4, *end = p + size;
      for (uint64_t *f : fields) {
        if (*f != 0xFFFFFFFF) continue;
        if (end - p < 8) return a.corrupt("entry " + m.name + " has a short zip64 extra field");
        *f = le(p, 8);
        p += 8;
      }
      return Error::success();
    }
    k += 4 + size;
  }
  return a.corrupt("entry " + m.name + " has 32-bit sizes of 0xFFFFFFFF but no zip64 field");
}

// Parses `count` central directory entries from dir into a.members.
Error parseDirectory(Archive &a, const std::vector<uint8_t> &dir, uint64_t count) {
  uint64_t at = 0;
  for (uint64_t i = 0; i < count; ++i) {
    const uint8_t *p = dir.data() + at;
    if (dir.size() - at < kCentralSize || le(p, 4) != kCentralSig)
      return a.corrupt("central directory entry " + std::to_string(i) + " is missing");
    uint64_t nameLen = le(p + 28, 2), extraLen = le(p + 30, 2), commentLen = le(p + 32, 2);
    if (dir.size() - at - kCentralSize < nameLen + extraLen + commentLen)
      return a.corrupt("central directory entry " + std::to_string(i) + " is cut short");
    Member m;
    m.flags = uint16_t(le(p + 8, 2));
    m.method = uint16_t(le(p + 10, 2));
    m.crc = uint32_t(le(p + 16, 4));
    m.compressedSize = le(p + 20, 4);
    m.size = le(p + 24, 4);
    m.localOffset = le(p + 42, 4);
    m.name.assign(reinterpret_cast<const char *>(p + kCentralSize), nameLen);
    if (Error e = applyZip64(a, p + kCentralSize + nameLen, extraLen, m)) return e;
    a.members.push_back(std::move(m));
    at += kCentralSize + nameLen + extraLen + commentLen;
  }
  return Error::success();
}

// Finds the end-of-central-directory record in the file's last 64 KiB + 22 bytes: the last
// signature whose comment length reaches exactly the end of the file. Returns its offset.
Expected<uint64_t> findEnd(const Archive &a, uint8_t record[kEndSize]) {
  uint64_t tailSize = std::min(a.size, kEndSize + kMaxComment);
  std::vector<uint8_t> tail(tailSize);
  if (a.size >= kEndSize)
    if (Error e = a.readAt(a.size - tailSize, tail.data(), tail.size())) return e;
  // Candidates from the last possible position back; `from` is one past the candidate's start.
  for (uint64_t from = tailSize - kEndSize + 1; a.size >= kEndSize && from > 0; --from) {
    const uint8_t *p = tail.data() + from - 1;
    if (le(p, 4) == kEndSig && from - 1 + kEndSize + le(p + 20, 2) == tailSize) {
      std::memcpy(record, p, kEndSize);
      return a.size - tailSize + from - 1;
    }
  }
  uint8_t head[4] = {};
  if (a.size >= 4)
    if (Error e = a.readAt(0, head, 4)) return e;
  if (a.size >= 4 && le(head, 4) == kLocalSig)
    return a.fail("truncated zip archive (its end-of-central-directory record is missing)");
  return a.fail("not a zip archive (an .npz file)");
}

// Opens path and reads its central directory.
Expected<Archive> openArchive(const std::string &path) {
  Archive a;
  a.path = path;
  Expected<FilePtr> f = openRegularFile(path, a.size, "data file");
  if (!f) return Error::make(path + ": " + f.error().message());
  a.file = std::move(*f);
  uint8_t end[kEndSize];
  Expected<uint64_t> endPos = findEnd(a, end);
  if (!endPos) return endPos.takeError();
  if (le(end + 4, 2) != 0 || le(end + 6, 2) != 0)
    return a.fail("a zip archive split over several disks, which is not supported");
  uint64_t count = le(end + 10, 2), dirSize = le(end + 12, 4), dirOffset = le(end + 16, 4);
  uint64_t dirLimit = *endPos;
  uint8_t locator[kLocatorSize];
  if (*endPos >= kLocatorSize) {
    if (Error e = a.readAt(*endPos - kLocatorSize, locator, kLocatorSize)) return e;
    if (le(locator, 4) == kLocatorSig) {
      uint64_t end64Pos = le(locator + 8, 8);
      if (end64Pos > *endPos - kLocatorSize || *endPos - kLocatorSize - end64Pos < kEnd64Size)
        return a.corrupt("its zip64 end record lies outside the file");
      uint8_t end64[kEnd64Size];
      if (Error e = a.readAt(end64Pos, end64, kEnd64Size)) return e;
      if (le(end64, 4) != kEnd64Sig) return a.corrupt("its zip64 end record is missing");
      count = le(end64 + 32, 8);
      dirSize = le(end64 + 40, 8);
      dirOffset = le(end64 + 48, 8);
      dirLimit = end64Pos;
    }
  }
  if (dirOffset > dirLimit || dirSize > dirLimit - dirOffset)
    return a.corrupt("its central directory lies outside the file");
  if (count > dirSize / kCentralSize)
    return a.corrupt("its central directory is too small for " + std::to_string(count) +
                     " entries");
  std::vector<uint8_t> dir(dirSize);
  if (Error e = a.readAt(dirOffset, dir.data(), dir.size())) return e;
  if (Error e = parseDirectory(a, dir, count)) return e;
  return a;
}

// The arrays an archive holds, for a message: "x, y", the members' names less ".npy", the
// first 10 of them and how many more.
std::string arrayNames(const Archive &a) {
  constexpr size_t kListed = 10;
  std::string names;
  for (size_t i = 0; i < std::min(a.members.size(), kListed); ++i) {
    std::string n = a.members[i].name;
    if (n.size() > 4 && n.compare(n.size() - 4, 4, ".npy") == 0) n.resize(n.size() - 4);
    names += (i ? ", " : "") + n;
  }
  if (a.members.size() > kListed)
    names += " and " + std::to_string(a.members.size() - kListed) + " more";
  return names.empty() ? "none" : names;
}

// Checks m can be read and returns the offset of its data, past its local header.
Expected<uint64_t> locateData(const Archive &a, const Member &m) {
  std::string what = "member " + m.name;
  if (m.flags & 1) return a.fail(what + " is encrypted");
  if (m.method != 0 && m.method != 8)
    return a.fail(what + " uses compression method " + std::to_string(m.method) +
                  "; only stored (0) and deflate (8) are supported");
  if (m.method == 0 && m.size != m.compressedSize)
    return a.corrupt(what + " is stored but its sizes differ");
  if (m.method == 8 && m.size / kMaxDeflateRatio > m.compressedSize)
    return a.corrupt(what + " claims " + std::to_string(m.size) + " bytes from " +
                     std::to_string(m.compressedSize) + ", more than deflate can produce");
  uint8_t local[kLocalSize];
  if (m.localOffset > a.size || a.size - m.localOffset < kLocalSize)
    return a.fail(what + " is truncated");
  if (Error e = a.readAt(m.localOffset, local, kLocalSize)) return e;
  if (le(local, 4) != kLocalSig)
    return a.corrupt("no local header for " + m.name + " at offset " +
                     std::to_string(m.localOffset));
  uint64_t nameLen = le(local + 26, 2), extraLen = le(local + 28, 2);
  uint64_t data = m.localOffset + kLocalSize + nameLen + extraLen;
  if (data > a.size || a.size - data < m.compressedSize) return a.fail(what + " is truncated");
  std::string name(nameLen, '\0');
  if (Error e = a.readAt(m.localOffset + kLocalSize, name.data(), nameLen)) return e;
  if (name != m.name) return a.corrupt("the local header of " + m.name + " names " + name);
  return data;
}

// Reads one member's bytes in order, stored or inflated, and checks its CRC at the end.
class MemberReader {
public:
  MemberReader(const Archive &a, const Member &m) : a_(a), m_(m), left_(m.compressedSize) {}
  ~MemberReader() {
    if (inflating_) inflateEnd(&z_);
  }
  MemberReader(const MemberReader &) = delete;
  MemberReader &operator=(const MemberReader &) = delete;

  // Positions the file at the member's data, which starts at `offset`.
  Error start(uint64_t offset) {
    if (::fseeko(a_.file.get(), off_t(offset), SEEK_SET) != 0)
      return a_.fail("read error at offset " + std::to_string(offset));
    if (m_.method != 8) return Error::success();
    input_.resize(kInputChunk);
    if (inflateInit2(&z_, -MAX_WBITS) != Z_OK)
      return fail("cannot be inflated (zlib did not start)");
    inflating_ = true;
    return Error::success();
  }

  // Reads the next n bytes of the member, which the caller has checked it holds, into dst.
  Error read(uint8_t *dst, uint64_t n) {
    for (uint64_t done = 0; done < n;) {
      size_t chunk = size_t(std::min<uint64_t>(n - done, 1u << 30));
      if (Error e = m_.method == 8 ? inflateInto(dst + done, chunk) : copyInto(dst + done, chunk))
        return e;
      crc_ = uint32_t(crc32_z(crc_, dst + done, chunk));
      done += chunk;
    }
    return Error::success();
  }

  // After the last byte: checks the deflate stream ends there and the CRC matches.
  Error finish() {
    if (m_.method == 8 && !ended_) {
      // One more byte must not come: the stream must end (which inflateInto reports as ending
      // early) exactly here.
      uint8_t extra;
      Error e = inflateInto(&extra, 1);
      if (!e) return fail("holds more data than its zip entry's size says");
      if (!ended_) return e;
      consumeError(std::move(e));
    }
    if (crc_ != m_.crc) {
      char buf[80];
      std::snprintf(buf, sizeof(buf), " (its data gives 0x%08x, its zip entry says 0x%08x)", crc_,
                    m_.crc);
      return fail(std::string("fails its CRC check") + buf);
    }
    return Error::success();
  }

  Error fail(const std::string &why) const { return a_.fail("member " + m_.name + " " + why); }

private:
  // Stored data: straight from the file.
  Error copyInto(uint8_t *dst, size_t n) {
    if (std::fread(dst, 1, n, a_.file.get()) != n) return fail("is truncated");
    left_ -= n;
    return Error::success();
  }

  // Deflated data: inflates exactly n bytes into dst, reading input as needed. Sets ended_ when
  // the stream ends, which is an error (the member is shorter than its entry) before n bytes.
  Error inflateInto(uint8_t *dst, size_t n) {
    z_.next_out = dst;
    z_.avail_out = uInt(n);
    while (z_.avail_out > 0) {
      if (z_.avail_in == 0 && left_ > 0) {
        size_t want = size_t(std::min<uint64_t>(left_, input_.size()));
        if (std::fread(input_.data(), 1, want, a_.file.get()) != want) return fail("is truncated");
        left_ -= want;
        z_.next_in = input_.data();
        z_.avail_in = uInt(want);
      }
      int rc = inflate(&z_, Z_NO_FLUSH);
      if (rc == Z_STREAM_END) {
        ended_ = true;
        if (z_.avail_out > 0) return fail("is truncated (its deflate stream ends early)");
      } else if (rc == Z_BUF_ERROR && z_.avail_in == 0 && left_ == 0) {
        return fail("is truncated");
      } else if (rc != Z_OK) {
        return fail(std::string("is corrupt (") + (z_.msg ? z_.msg : "inflate failed") + ")");
      }
    }
    return Error::success();
  }

  const Archive &a_;
  const Member &m_;
  uint64_t left_;
  uint32_t crc_ = 0;
  z_stream z_{};
  bool inflating_ = false, ended_ = false;
  std::vector<uint8_t> input_;
};

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
