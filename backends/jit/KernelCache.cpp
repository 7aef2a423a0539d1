#include "backends/jit/KernelCache.h"

#include <llvm/Support/xxhash.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

namespace dtnn::jit {

namespace {

// The entry's layout: the magic, then the key's length and the key, then
// the object's length, its checksum and the object (lengths and checksum as
// 8 little-endian bytes).
constexpr std::string_view kMagic = "DTNNJIT1";

uint64_t hashOf(std::string_view text) {
  return llvm::xxh3_64bits(
      llvm::ArrayRef<uint8_t>(reinterpret_cast<const uint8_t *>(text.data()), text.size()));
}

void putU64(std::string &out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

// Reads 8 bytes at `pos`; false past the end.
bool getU64(const std::string &in, size_t &pos, uint64_t &v) {
  if (pos > in.size() || in.size() - pos < 8) return false;
  v = 0;
  for (int i = 0; i < 8; ++i) v |= uint64_t(static_cast<unsigned char>(in[pos + i])) << (8 * i);
  pos += 8;
  return true;
}

} // namespace

std::string hashHex(std::string_view text) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(hashOf(text)));
  return buf;
}

std::string KernelCache::pathOf(const std::string &key) const {
  return (std::filesystem::path(dir_) / (hashHex(key) + ".o")).string();
}

std::optional<std::string> KernelCache::load(const std::string &key, std::string &problem) const {
  problem.clear();
  std::string path = pathOf(key);
  std::ifstream f(path, std::ios::binary);
  if (!f) return std::nullopt;
  std::ostringstream ss;
  ss << f.rdbuf();
  std::string in = ss.str();
  auto bad = [&](const std::string &why) {
    problem = "the jit's kernel cache entry " + path + " " + why;
    return std::nullopt;
  };
  if (in.compare(0, kMagic.size(), kMagic) != 0) return bad("is not a kernel cache entry");
  size_t pos = kMagic.size();
  uint64_t keyLen = 0, objLen = 0, sum = 0;
  if (!getU64(in, pos, keyLen) || in.size() - pos < keyLen) return bad("is truncated");
  if (in.compare(pos, keyLen, key) != 0) return bad("holds another kernel");
  pos += keyLen;
  if (!getU64(in, pos, objLen) || !getU64(in, pos, sum) || in.size() - pos != objLen)
    return bad("is truncated");
  std::string object = in.substr(pos);
  if (hashOf(object) != sum) return bad("fails its checksum");
  return object;
}

Error KernelCache::store(const std::string &key, std::string_view object) const {
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec) return Error::make("cannot create " + dir_ + ": " + ec.message());
  std::string out(kMagic);
  putU64(out, key.size());
  out += key;
  putU64(out, object.size());
  putU64(out, hashOf(object));
  out.append(object.data(), object.size());
  static std::atomic<uint64_t> serial{0};
  std::string path = pathOf(key);
  std::string tmp = path + ".tmp." + std::to_string(getpid()) + "." + std::to_string(serial++);
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f.write(out.data(), std::streamsize(out.size()));
    f.flush();
    if (!f) {
      std::filesystem::remove(tmp, ec);
      return Error::make("cannot write " + tmp);
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string why = std::strerror(errno);
    std::filesystem::remove(tmp, ec);
    return Error::make("cannot rename " + tmp + " to " + path + ": " + why);
  }
  return Error::success();
}

} // namespace dtnn::jit
