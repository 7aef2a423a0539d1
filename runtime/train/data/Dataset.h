// An in-memory labelled image dataset, as the data readers produce it.
#pragma once

#include <cstdint>
#include <vector>

namespace dtnn {

// Samples stored back to back as u8 pixels, with one class label per sample.
struct Dataset {
  int64_t count = 0;                 // Number of samples.
  std::vector<int64_t> sampleShape;  // Shape of one sample, e.g. {1,28,28} or {3,32,32}.
  std::vector<uint8_t> pixels;       // count * prod(sampleShape) bytes, sample-major.
  std::vector<int32_t> labels;       // One label per sample, each in 0..numClasses-1.
  int32_t numClasses = 0;            // Number of classes the labels range over.
};

} // namespace dtnn
