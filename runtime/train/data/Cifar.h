// Reader for the CIFAR-10 binary format.
#pragma once

#include "ir/Error.h"
#include "runtime/train/data/Dataset.h"

#include <string>
#include <vector>

namespace dtnn {

// Reads and concatenates CIFAR-10 batch files (records of 1 label byte + 3072 pixel bytes)
// into a Dataset with sampleShape {3,32,32}; errors name the file and the problem.
Expected<Dataset> readCifar10(const std::vector<std::string> &batchFiles);

} // namespace dtnn
