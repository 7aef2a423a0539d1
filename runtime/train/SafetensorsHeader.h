// The JSON header of a safetensors file: the writer, which emits compact JSON with sorted keys
// padded with spaces so that the data starts 8-byte aligned, and a strict parser for exactly
// the schema safetensors uses. Checkpoint.cpp holds the file-level logic: the header length,
// the layout of the data and the reading and writing of files.
#pragma once

#include "ir/Error.h"
#include "runtime/train/CheckpointData.h"

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace dtnn::runtime::safetensors {

// The data holds the tensors grouped by element size, largest first, each group in name
// order. As the data starts 8-byte aligned, every tensor then starts at a multiple of its
// element size, which readers that map the file rather than copy it need.
inline constexpr unsigned kElementSizes[] = {8, 4, 2, 1};

// The safetensors name of an element type, e.g. "F32".
std::string_view safetensorsName(ir::DType t);

// Appends s to out as a JSON string literal. s must be valid UTF-8; it is written unescaped
// except for the quote, the backslash and control characters.
void appendJsonString(std::string &out, std::string_view s);

// s in single quotes for an error message, shortened if long.
std::string quoted(std::string_view s);

// The JSON header of ckpt, padded with spaces to a multiple of 8 bytes, with the data offsets
// of the order above. Keys are sorted, independent of the order of the data. Fails on text
// that is not valid UTF-8, the reserved name "__metadata__" and tensors that cannot be stored.
Expected<std::string> buildHeader(const Checkpoint &ckpt);

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

// Parses header text, which must be valid UTF-8 and follow the schema exactly; the error says
// what is wrong and, for malformed JSON, at which byte. The byte ranges of the entries are not
// checked against each other or the data.
Expected<Header> parseHeader(const std::string &text);

} // namespace dtnn::runtime::safetensors
