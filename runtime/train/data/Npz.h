// Reading NumPy's .npz archives (numpy.savez and savez_compressed: a zip of .npy files, stored
// or deflated, zip64 included) and the .npy format inside them, as PyDTNN's ImageNet chunks are
// written: `x` uint8 [N, 3, S, S] and `y` the labels.
#pragma once

#include "ir/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace dtnn {

// One array: its NumPy type string ("|u1", "<i8", "<f4"), shape, and bytes in C order.
struct NpyArray {
  std::string dtype;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;
  int64_t numel() const;
};

// Reads array `name` (the member name.npy) of the .npz file at path. Errors name the file and
// the problem: not a zip, no member `name` (listing those there are), a Fortran-ordered or
// big-endian or object array, a truncated or corrupt member (CRC mismatch).
Expected<NpyArray> readNpzArray(const std::string &path, const std::string &name);

// The same without the data (dtype and shape only): decompresses no more than the member's
// header.
Expected<NpyArray> readNpzHeader(const std::string &path, const std::string &name);

// Converts an array of integer labels (any signed or unsigned little-endian integer type of
// 1-8 bytes, or one-hot rows of any numeric type given as [N, C]) to int32 class numbers minus
// `offset`. Errors: a value that does not fit, a row that is not one-hot.
Expected<std::vector<int32_t>> npyLabels(const NpyArray &a, int64_t offset);

} // namespace dtnn
