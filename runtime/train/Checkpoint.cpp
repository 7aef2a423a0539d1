// Safetensors files: the header length, the layout of the data, and reading and writing whole
// files; the JSON header itself is SafetensorsHeader.cpp's. The reader does not trust the
// file: the header length is checked against a cap and the file size before anything is
// allocated, the header is parsed strictly, and the byte ranges of the tensors must tile the
// data exactly (no gaps, no overlaps, nothing after the last tensor) before any tensor is
// allocated, so memory stays bounded by the file size.
#include "runtime/train/Checkpoint.h"

#include <cmath>

#include "ir/Files.h"

#include "ir/Output.h"
#include "runtime/train/SafetensorsHeader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

namespace dtnn::runtime {
namespace {

using ir::DType;
using safetensors::Entry;
using safetensors::quoted;
using safetensors::safetensorsName;

// Text form of a byte range, e.g. "[0, 4096)".
std::string rangeStr(uint64_t begin, uint64_t end) {
  return "[" + std::to_string(begin) + ", " + std::to_string(end) + ")";
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

// Loads path, returning errors without the path prefix.
Expected<Checkpoint> load(const std::string &path) {
  uint64_t fileSize = 0;
  Expected<FilePtr> file = openRegularFile(path, fileSize, "safetensors file");
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
  Expected<safetensors::Header> header = safetensors::parseHeader(text);
  if (!header)
    return header.takeError();
  if (Error e = checkLayout(header->entries, fileSize - 8 - headerBytes))
    return e;
  Checkpoint ckpt;
  ckpt.metadata = std::move(header->metadata);
  if (Error e = readTensors(file->get(), header->entries, ckpt))
    return e;
  return ckpt;
}

} // namespace

Error nonFiniteTensor(const Checkpoint &ckpt) {
  for (const auto &[name, t] : ckpt.tensors) {
    int64_t bad = 0, n = 0;
    if (t.type().dtype == DType::F32) {
      n = int64_t(t.bytes() / 4);
      const auto *v = static_cast<const float *>(t.raw());
      for (int64_t i = 0; i < n; ++i) bad += !std::isfinite(v[i]);
    } else if (t.type().dtype == DType::F64) {
      n = int64_t(t.bytes() / 8);
      const auto *v = static_cast<const double *>(t.raw());
      for (int64_t i = 0; i < n; ++i) bad += !std::isfinite(v[i]);
    }
    if (bad)
      return Error::make("'" + name + "' holds " + std::to_string(bad) + " of " +
                         std::to_string(n) + " values that are not finite (NaN or infinite)");
  }
  return Error::success();
}

Error saveCheckpoint(const std::string &path, const Checkpoint &ckpt) {
  Expected<std::string> header = safetensors::buildHeader(ckpt);
  if (!header)
    return Error::make(path + ": " + header.error().message());
  return writeOutput(path, [&](std::FILE *file) {
    uint8_t length[8];
    for (int i = 0; i < 8; ++i)
      length[i] = uint8_t(uint64_t(header->size()) >> (8 * i));
    if (std::fwrite(length, 1, 8, file) != 8 ||
        std::fwrite(header->data(), 1, header->size(), file) != header->size())
      return false;
    for (unsigned size : safetensors::kElementSizes)
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