// The zip archive under an .npz file (Npz.cpp says how it is read): its central directory, and
// its members read as streams, stored or deflated, CRC checked. Internal to the data sources.
#pragma once

#include "ir/Error.h"
#include "ir/Files.h"

#include <zlib.h>

#include <cstdint>
#include <string>
#include <vector>

namespace dtnn::zip {

// The little-endian unsigned number of n bytes at p.
inline uint64_t le(const uint8_t *p, int n) {
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

// An open zip file (an .npz) and its central directory.
struct Archive {
  std::string path;
  FilePtr file;
  uint64_t size = 0;
  std::vector<Member> members;

  Error fail(const std::string &why) const { return Error::make(path + ": " + why); }
  Error corrupt(const std::string &why) const { return fail("corrupt zip archive (" + why + ")"); }
  // Reads n bytes at offset, which the caller has checked lie inside the file.
  Error readAt(uint64_t offset, void *dst, size_t n) const;
};

// Opens path and reads its central directory.
Expected<Archive> openArchive(const std::string &path);

// The arrays an archive holds, for a message: "x, y", the members' names less ".npy", the
// first 10 of them and how many more.
std::string arrayNames(const Archive &a);

// Checks m can be read and returns the offset of its data, past its local header.
Expected<uint64_t> locateData(const Archive &a, const Member &m);

// Reads one member's bytes in order, stored or inflated, and checks its CRC at the end.
class MemberReader {
public:
  MemberReader(const Archive &a, const Member &m) : a_(a), m_(m), left_(m.compressedSize) {}
  ~MemberReader();
  MemberReader(const MemberReader &) = delete;
  MemberReader &operator=(const MemberReader &) = delete;

  // Positions the file at the member's data, which starts at `offset`.
  Error start(uint64_t offset);
  // Reads the next n bytes of the member, which the caller has checked it holds, into dst.
  Error read(uint8_t *dst, uint64_t n);
  // After the last byte: checks the deflate stream ends there and the CRC matches.
  Error finish();
  Error fail(const std::string &why) const { return a_.fail("member " + m_.name + " " + why); }

private:
  // Stored data: straight from the file.
  Error copyInto(uint8_t *dst, size_t n);
  // Deflated data: inflates exactly n bytes into dst, reading input as needed. Sets ended_ when
  // the stream ends, which is an error (the member is shorter than its entry) before n bytes.
  Error inflateInto(uint8_t *dst, size_t n);

  const Archive &a_;
  const Member &m_;
  uint64_t left_;
  uint32_t crc_ = 0;
  z_stream z_{};
  bool inflating_ = false, ended_ = false;
  std::vector<uint8_t> input_;
};

} // namespace dtnn::zip
