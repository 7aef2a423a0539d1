// A labelled dataset, as the data readers produce it: images with one class label each, or
// token sequences with one label per position (a language model's next tokens). The samples are
// held in memory, or, for a folder of image files, read and decoded as batches need them.
#pragma once

#include "runtime/train/data/ImageDecode.h"
#include "runtime/train/data/ImageFolder.h"
#include "runtime/train/data/NpzChunks.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace dtnn {

// How a text data set's tokens map back to text: byte tokens are the bytes themselves; a
// character token is an index into `chars`, the Unicode code points (U+DC80 + b for a byte b
// that is not UTF-8, as Python's surrogateescape) in ascending order.
struct Vocabulary {
  std::vector<uint32_t> chars; // empty: byte tokens
  bool bytes() const { return chars.empty(); }
};

// Samples stored back to back, sample-major: u8 pixels (the images a model takes as f32 or u8),
// or i32 tokens (the token sequences a model takes as i32); or image files (`files`), which the
// loader decodes into the model's input size (sampleShape {3, H, W}, set by the run); or NPZ
// chunks (`chunks`), whose pixels the loader decompresses a chunk at a time.
struct Dataset {
  int64_t count = 0;                 // Number of samples.
  std::vector<int64_t> sampleShape;  // Shape of one sample, e.g. {1,28,28} or {128} tokens.
  std::vector<uint8_t> pixels;       // count * prod(sampleShape) bytes of images, or empty.
  std::vector<int32_t> tokens;       // count * prod(sampleShape) tokens, or empty.
  bool tokenSamples = false;         // The samples are `tokens`, not `pixels`.
  // labelsPerSample labels per sample, each in 0..numClasses-1 or ignoreIndex.
  std::vector<int32_t> labels;
  int64_t labelsPerSample = 1;
  int32_t numClasses = 0;            // Number of classes the labels range over.
  int32_t ignoreIndex = -100;        // The label of positions no loss counts (padding).
  double bytesPerLabel = 1;          // Bytes of text per counted label (for bits per byte).
  Vocabulary vocab;                  // Token samples: how tokens map to text.
  const char *noun = "images";       // What a sample is, for rates: "images", "sequences".
  std::shared_ptr<const ImageFolderIndex> files; // Image files, read when a batch needs them.
  std::shared_ptr<const NpzChunks> chunks; // NPZ chunks, decompressed when a batch needs them.
  std::vector<std::string> classNames; // Names of the classes, when the source has them.
  int64_t maxPixels = kDefaultMaxImagePixels; // Files: images with more pixels are refused.
  bool skipBadImages = true; // Files: replace an unreadable image by another (else fail).
  int64_t sampleNumel() const {
    int64_t n = 1;
    for (int64_t d : sampleShape) n *= d;
    return n;
  }
  // Bytes of memory the samples and labels take.
  uint64_t bytes() const {
    uint64_t b = pixels.size() + (tokens.size() + labels.size()) * sizeof(int32_t);
    if (files) b += files->names.size() + files->offsets.size() * sizeof(uint64_t);
    return b;
  }
};

} // namespace dtnn
