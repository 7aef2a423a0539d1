// Data augmentation: the transforms of torchvision's ImageNet and CIFAR recipes, with
// torchvision's semantics. RandomResizedCrop (a box of random area and aspect ratio, resized to
// the model's size), Resize then CenterCrop (evaluation), RandomCrop with zero padding, and
// RandomHorizontalFlip. Every random choice comes from a Draws, which hands out values the way
// torch's generators do (a float32 uniform, an integer range). Given the same values, the boxes
// equal torchvision's. In a run the values come from a stream of (seed, epoch, sample), so a
// sample's augmentation does not depend on the rank, the thread or the step it is read in.
//
// Encoded images go through transformImage: the crop is decided from the header, only that
// region is decoded (with DCT scaling when the region is at least twice the output), and it is
// resized as Pillow resizes (Resample.h). Images held in memory (IDX, CIFAR-10) go through
// planarWindow, which only places the output window over the sample.
#pragma once

#include "ir/Error.h"
#include "runtime/Random.h"
#include "runtime/train/data/ImageDecode.h"
#include "runtime/train/data/Resample.h"

#include <cstdint>
#include <string>
#include <vector>

namespace dtnn {

// Where a transform's random values come from.
class Draws {
public:
  virtual ~Draws() = default;
  // A uniform value in [lo, hi), rounded to float32 (torch.empty(1).uniform_(lo, hi)).
  virtual double uniform(double lo, double hi) = 0;
  // A uniform integer in [lo, hi) (torch.randint(lo, hi, (1,))); hi > lo.
  virtual int64_t randint(int64_t lo, int64_t hi) = 0;
};

// The draws of one sample in one epoch: an independent stream of (seed, epoch, sample).
class SampleDraws : public Draws {
public:
  SampleDraws(uint64_t seed, int64_t epoch, int64_t sample);
  double uniform(double lo, double hi) override;
  int64_t randint(int64_t lo, int64_t hi) override;

private:
  runtime::Random rng_;
};

// How a sample becomes the model's input of height x width.
struct ImageTransform {
  enum class Crop {
    None,          // the sample as it is (in memory); an encoded image resized to the output
    RandomResized, // torchvision's RandomResizedCrop(size, scale, ratio)
    ResizeCenter,  // Resize(resize) then CenterCrop(size)
    PadRandom,     // RandomCrop(size, padding=pad): zero padding, then a random window
  };
  Crop crop = Crop::None;
  double scale[2] = {0.08, 1.0};
  double ratio[2] = {3.0 / 4.0, 4.0 / 3.0};
  int64_t resize = 0;    // ResizeCenter: the shorter side after resizing
  int64_t pad = 0;       // PadRandom
  double flip = 0;       // probability of a horizontal flip, drawn after the crop
  bool dctScaling = true; // encoded JPEGs: let the decoder shrink a region twice the output
  int64_t height = 0, width = 0;
  // Whether the transform draws anything.
  bool random() const { return crop == Crop::RandomResized || crop == Crop::PadRandom || flip > 0; }
  // "random_resized_crop(scale=[0.08, 1], ratio=[0.75, 1.333]) + flip(0.5) to 224x224".
  std::string str() const;
};

// Evaluation's transform of image files for a model input of height x width: torchvision's
// Resize(resize) then CenterCrop; resize 0 means the larger side / 0.875 (256 for 224).
ImageTransform centreCropTransform(int64_t height, int64_t width, int64_t resize, bool dctScaling);

// torchvision's RandomResizedCrop.get_params on a width x height image: up to ten tries of a
// random area and log-uniform aspect ratio, else the central crop of the nearest ratio.
PixelBox randomResizedCropBox(int64_t width, int64_t height, const double scale[2],
                              const double ratio[2], Draws &draws);

// torchvision's Resize(resize) (shorter side to `resize`, the longer one scaled and truncated)
// followed by CenterCrop(height, width): the resized size and the crop's place in it.
struct ResizeCenterPlan {
  int64_t resizedWidth = 0, resizedHeight = 0, left = 0, top = 0;
};
ResizeCenterPlan resizeCenterPlan(int64_t width, int64_t height, int64_t resize,
                                  int64_t outHeight, int64_t outWidth);

// Where an in-memory sample's output pixels come from: output (y, x) reads the source at
// (y + dy, x' + dx) with x' = width - 1 - x when flipped, else x; outside the source it reads 0
// (the padding). Draws the crop (PadRandom), then the flip.
struct PlanarWindow {
  int64_t dy = 0, dx = 0;
  bool flip = false;
};
PlanarWindow planarWindow(int64_t height, int64_t width, const ImageTransform &t, Draws &draws);

// Buffers one worker reuses from image to image.
struct TransformScratch {
  Image decoded;
  ResampleScratch resample;
};

// Decodes the encoded image `data` and applies t (crop and resize; then the flip is drawn):
// writes height x width x 3 bytes (HWC) to `out` and returns whether the result is to be
// flipped. Errors are the decoder's, without the path.
Expected<bool> transformImage(const uint8_t *data, size_t size, const ImageTransform &t,
                              int64_t maxPixels, Draws &draws, TransformScratch &scratch,
                              uint8_t *out);

} // namespace dtnn
