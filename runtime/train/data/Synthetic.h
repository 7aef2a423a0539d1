// A deterministic, learnable synthetic dataset of any sample shape.
#pragma once

#include "runtime/train/data/Dataset.h"

#include <cstdint>
#include <vector>

namespace dtnn {

// Returns count samples of sampleShape in numClasses classes. Each class has a fixed random
// prototype image chosen by seed; a sample is its class's prototype plus bell-shaped noise,
// clamped to u8. Sample i has label i % numClasses and depends only on (seed, i), so a
// dataset of n samples is a prefix of one of more. All arithmetic is integer, so the bytes are
// the same on every platform.
Dataset makeSynthetic(const std::vector<int64_t> &sampleShape, int32_t numClasses, int64_t count,
                      uint64_t seed);

} // namespace dtnn
