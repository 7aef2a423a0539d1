// Reader for the IDX format of MNIST and Fashion-MNIST, plain or gzip-compressed.
#pragma once

#include "ir/Error.h"
#include "runtime/train/data/Dataset.h"

#include <string>

namespace dtnn {

// Reads a u8 image file (magic 0x00000803, 3 dims) and its u8 label file (magic 0x00000801,
// 1 dim), each plain or gzipped, into a 10-class Dataset; errors name the file and the problem.
Expected<Dataset> readIdx(const std::string &imagesPath, const std::string &labelsPath);

} // namespace dtnn
