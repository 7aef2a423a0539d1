// The zip reader of .npz files (see Npz.cpp for how it reads an archive, and Zip.h).
#include "runtime/train/data/Zip.h"

#include <sys/types.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace dtnn::zip {
namespace {


constexpr uint32_t kLocalSig = 0x04034b50, kCentralSig = 0x02014b50, kEndSig = 0x06054b50;
constexpr uint32_t kEnd64Sig = 0x06064b50, kLocatorSig = 0x07064b50;
constexpr uint64_t kEndSize = 22, kLocatorSize = 20, kEnd64Size = 56;
constexpr uint64_t kCentralSize = 46, kLocalSize = 30, kMaxComment = 0xFFFF;
constexpr uint64_t kMaxDeflateRatio = 1032; // deflate's longest match, 258 bytes, in 2 bits
constexpr size_t kInputChunk = 1 << 16;

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

} // namespace

Error Archive::readAt(uint64_t offset, void *dst, size_t n) const {
  if (::fseeko(file.get(), off_t(offset), SEEK_SET) != 0 || std::fread(dst, 1, n, file.get()) != n)
    return fail("read error at offset " + std::to_string(offset));
  return Error::success();
}

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

MemberReader::~MemberReader() {
  if (inflating_) inflateEnd(&z_);
}

Error MemberReader::start(uint64_t offset) {
  if (::fseeko(a_.file.get(), off_t(offset), SEEK_SET) != 0)
    return a_.fail("read error at offset " + std::to_string(offset));
  if (m_.method != 8) return Error::success();
  input_.resize(kInputChunk);
  if (inflateInit2(&z_, -MAX_WBITS) != Z_OK)
    return fail("cannot be inflated (zlib did not start)");
  inflating_ = true;
  return Error::success();
}

Error MemberReader::read(uint8_t *dst, uint64_t n) {
  for (uint64_t done = 0; done < n;) {
    size_t chunk = size_t(std::min<uint64_t>(n - done, 1u << 30));
    if (Error e = m_.method == 8 ? inflateInto(dst + done, chunk) : copyInto(dst + done, chunk))
      return e;
    crc_ = uint32_t(crc32_z(crc_, dst + done, chunk));
    done += chunk;
  }
  return Error::success();
}

Error MemberReader::finish() {
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

Error MemberReader::copyInto(uint8_t *dst, size_t n) {
  if (std::fread(dst, 1, n, a_.file.get()) != n) return fail("is truncated");
  left_ -= n;
  return Error::success();
}

Error MemberReader::inflateInto(uint8_t *dst, size_t n) {
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

} // namespace dtnn::zip
