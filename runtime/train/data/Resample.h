// Resizing 8-bit RGB images as Pillow's Image.resize(size, BILINEAR, box) does, to within one
// level: a separable triangle filter widened by the downscaling factor (so that shrinking
// averages, as antialiasing should), a horizontal pass into an 8-bit image of the rows the
// vertical pass needs, then the vertical pass, with Pillow's windows and weights (the weights in
// 14-bit fixed point, where Pillow keeps 22 bits, for SSE2). torchvision's Resize, CenterCrop and
// RandomResizedCrop on PIL images are crops and this resize, so the same boxes give the same
// pixels to within 1/255. Only the outputs asked for are computed: a centre crop of a resized
// image costs the crop.
#pragma once

#include <cstdint>
#include <vector>

namespace dtnn {

// An 8-bit RGB image in memory, row after row (HWC), rows `stride` bytes apart.
struct RgbView {
  const uint8_t *data = nullptr;
  int64_t width = 0, height = 0, stride = 0;
};

// What to compute: the image resized to outWidth x outHeight from the source rectangle
// [x0, x1) x [y0, y1) (fractional, in source pixels, as Pillow's box), and of that only the
// part [cropX, cropX + cropWidth) x [cropY, cropY + cropHeight).
struct ResampleSpec {
  int64_t outWidth = 0, outHeight = 0;
  double x0 = 0, y0 = 0, x1 = 0, y1 = 0;
  int64_t cropX = 0, cropY = 0, cropWidth = 0, cropHeight = 0;
};

// Buffers one thread reuses from image to image.
struct ResampleScratch {
  std::vector<int32_t> startsX, startsY, pairWeights;
  std::vector<int16_t> weightsX, weightsY, pairs;
  std::vector<uint8_t> rows;
};

// Writes the crop of the resized image to out (cropWidth x cropHeight, HWC, packed).
void resampleBilinear(const RgbView &src, const ResampleSpec &spec, ResampleScratch &scratch,
                      uint8_t *out);

} // namespace dtnn
