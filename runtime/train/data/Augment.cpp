// Augmentation (see Augment.h). The box arithmetic follows torchvision 0.14's transforms line by
// line: Python's round() is round-half-even (std::nearbyint), int() truncates, torch.log and
// torch.exp of the ratio run in float32.
#include "runtime/train/data/Augment.h"

#include "ir/Attributes.h"

#include <algorithm>
#include <cassert>
#include <cmath>

namespace dtnn {
namespace {

// Tags the streams of augmentation apart from the loader's shuffles (streams 0, 1, 2, ... by
// epoch) and its validation split.
constexpr uint64_t kAugmentStreams = uint64_t(1) << 63;

int64_t roundHalfEven(double v) { return int64_t(std::nearbyint(v)); }

} // namespace

SampleDraws::SampleDraws(uint64_t seed, int64_t epoch, int64_t sample)
    : rng_(seed, kAugmentStreams | (uint64_t(epoch) << 40) | uint64_t(sample)) {}

double SampleDraws::uniform(double lo, double hi) {
  float v = float(lo + (hi - lo) * rng_.uniform());
  return std::min<double>(v, std::nextafter(float(hi), float(lo))); // float rounding may reach hi
}

int64_t SampleDraws::randint(int64_t lo, int64_t hi) {
  assert(hi > lo);
  return std::min(hi - 1, lo + int64_t(rng_.uniform() * double(hi - lo)));
}

std::string ImageTransform::str() const {
  auto list = [](const double v[2]) { return ir::attrValueStr(std::vector<double>{v[0], v[1]}); };
  std::string s;
  switch (crop) {
  case Crop::None: s = "resize"; break;
  case Crop::RandomResized:
    s = "random_resized_crop(scale=" + list(scale) + ", ratio=" + list(ratio) + ")";
    break;
  case Crop::ResizeCenter:
    s = "resize(" + std::to_string(resize) + ") + center_crop";
    break;
  case Crop::PadRandom: s = "random_crop(pad=" + std::to_string(pad) + ")"; break;
  }
  if (flip > 0) s += " + flip(" + ir::attrValueStr(flip) + ")";
  return s + " to " + std::to_string(width) + "x" + std::to_string(height);
}

ImageTransform centreCropTransform(int64_t height, int64_t width, int64_t resize,
                                   bool dctScaling) {
  ImageTransform t;
  t.crop = ImageTransform::Crop::ResizeCenter;
  t.height = height;
  t.width = width;
  t.resize = resize > 0 ? resize : int64_t(std::lround(double(std::max(height, width)) / 0.875));
  t.dctScaling = dctScaling;
  return t;
}

PixelBox randomResizedCropBox(int64_t width, int64_t height, const double scale[2],
                              const double ratio[2], Draws &draws) {
  double area = double(height * width);
  float logRatio[2] = {std::log(float(ratio[0])), std::log(float(ratio[1]))};
  for (int attempt = 0; attempt < 10; ++attempt) {
    double targetArea = area * draws.uniform(scale[0], scale[1]);
    double aspect = double(std::exp(float(draws.uniform(logRatio[0], logRatio[1]))));
    int64_t w = roundHalfEven(std::sqrt(targetArea * aspect));
    int64_t h = roundHalfEven(std::sqrt(targetArea / aspect));
    if (0 < w && w <= width && 0 < h && h <= height) {
      int64_t i = draws.randint(0, height - h + 1);
      int64_t j = draws.randint(0, width - w + 1);
      return {j, i, w, h};
    }
  }
  // The central crop of the ratio nearest the image's.
  double inRatio = double(width) / double(height);
  double lo = std::min(ratio[0], ratio[1]), hi = std::max(ratio[0], ratio[1]);
  int64_t w = width, h = height;
  if (inRatio < lo)
    h = roundHalfEven(double(w) / lo);
  else if (inRatio > hi)
    w = roundHalfEven(double(h) * hi);
  return {(width - w) / 2, (height - h) / 2, w, h};
}

ResizeCenterPlan resizeCenterPlan(int64_t width, int64_t height, int64_t resize,
                                  int64_t outHeight, int64_t outWidth) {
  ResizeCenterPlan p;
  bool wide = width >= height;
  int64_t shortSide = wide ? height : width, longSide = wide ? width : height;
  int64_t newLong = int64_t(double(resize) * double(longSide) / double(shortSide));
  p.resizedWidth = wide ? newLong : resize;
  p.resizedHeight = wide ? resize : newLong;
  p.left = roundHalfEven(double(p.resizedWidth - outWidth) / 2.0);
  p.top = roundHalfEven(double(p.resizedHeight - outHeight) / 2.0);
  return p;
}

PlanarWindow planarWindow(int64_t height, int64_t width, const ImageTransform &t, Draws &draws) {
  PlanarWindow w;
  if (t.crop == ImageTransform::Crop::PadRandom) {
    int64_t ph = height + 2 * t.pad, pw = width + 2 * t.pad;
    // torchvision draws nothing when the padded image is the output's size.
    if (ph != t.height || pw != t.width) {
      w.dy = draws.randint(0, ph - t.height + 1) - t.pad;
      w.dx = draws.randint(0, pw - t.width + 1) - t.pad;
    } else {
      w.dy = w.dx = -t.pad;
    }
  }
  if (t.flip > 0) w.flip = draws.uniform(0.0, 1.0) < t.flip;
  return w;
}

Expected<bool> transformImage(const uint8_t *data, size_t size, const ImageTransform &t,
                              int64_t maxPixels, Draws &draws, TransformScratch &s,
                              uint8_t *out) {
  using Crop = ImageTransform::Crop;
  Expected<ImageHeader> header = readImageHeader(data, size, maxPixels);
  if (!header) return header.takeError();
  const int64_t W = header->width, H = header->height;

  // What to resize: the source box, the output size, and the part of the output wanted.
  PixelBox box{0, 0, W, H};
  ResampleSpec spec{t.width, t.height, 0, 0, 0, 0, 0, 0, t.width, t.height};
  if (t.crop == Crop::RandomResized) {
    box = randomResizedCropBox(W, H, t.scale, t.ratio, draws);
  } else if (t.crop == Crop::ResizeCenter) {
    ResizeCenterPlan p = resizeCenterPlan(W, H, t.resize, t.height, t.width);
    spec.outWidth = p.resizedWidth;
    spec.outHeight = p.resizedHeight;
    spec.cropX = p.left;
    spec.cropY = p.top;
  }
  DecodeOptions opts;
  opts.region = box;
  opts.maxPixels = maxPixels;
  if (t.dctScaling) {
    // The decoder may shrink the region while it stays at least twice the size the resize makes
    // of it, which leaves the resize an averaging shrink.
    opts.minWidth = 2 * spec.outWidth;
    opts.minHeight = 2 * spec.outHeight;
  }
  Expected<DecodedRegion> got = decodeImage(data, size, opts, s.decoded);
  if (!got) return got.takeError();

  // The box in the decoded image's pixels, and the whole pixels around it the filter may read:
  // at full scale exactly the crop, as torchvision crops before it resizes.
  const Image &img = s.decoded;
  double x0 = double(box.x) * got->scale - double(got->x);
  double y0 = double(box.y) * got->scale - double(got->y);
  double x1 = double(box.x + box.width) * got->scale - double(got->x);
  double y1 = double(box.y + box.height) * got->scale - double(got->y);
  int64_t hx0 = std::max<int64_t>(int64_t(std::floor(x0)), 0);
  int64_t hy0 = std::max<int64_t>(int64_t(std::floor(y0)), 0);
  int64_t hx1 = std::min<int64_t>(int64_t(std::ceil(x1)), img.width);
  int64_t hy1 = std::min<int64_t>(int64_t(std::ceil(y1)), img.height);
  RgbView view{img.rgb.data() + (hy0 * img.width + hx0) * 3, hx1 - hx0, hy1 - hy0, img.width * 3};
  spec.x0 = x0 - double(hx0);
  spec.y0 = y0 - double(hy0);
  spec.x1 = x1 - double(hx0);
  spec.y1 = y1 - double(hy0);
  resampleBilinear(view, spec, s.resample, out);
  return t.flip > 0 && draws.uniform(0.0, 1.0) < t.flip;
}

} // namespace dtnn
