// dtnn-image-transform: applies dtnn's decoder and one transform to an image file, with the
// random values given on the command line, and writes the result as a binary PPM, so that a test
// can compare it with Pillow's and torchvision's on the same file and the same values.
//
//   dtnn-image-transform OP FILE OUT.ppm [options]
//     OP: decode       the whole image (or --region X Y W H), as decoded
//         rrc          RandomResizedCrop(--size H W, --scale A B, --ratio A B) + flip
//         center       Resize(--resize R) + CenterCrop(--size H W) + flip
//         padcrop      RandomCrop(--size H W, padding=--pad P) + flip, of the decoded image
//     --flip P         the flip's probability (0: none)
//     --draws V,...    the values torch's generators gave, in order: each uniform_ result, then
//                      each randint and rand result
//     --no-dct         decode at full scale
//   Prints "box X Y W H" (rrc) and "flip 0|1".
#include "runtime/train/data/Augment.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

using namespace dtnn;

namespace {

// Hands out the given values in order.
class ReplayDraws : public Draws {
public:
  explicit ReplayDraws(std::vector<double> v) : values_(std::move(v)) {}
  double uniform(double, double) override { return take(); }
  int64_t randint(int64_t, int64_t) override { return int64_t(take()); }

private:
  double take() {
    if (next_ >= values_.size()) {
      std::cerr << "dtnn-image-transform: error: more draws were needed than --draws gives\n";
      std::exit(1);
    }
    return values_[next_++];
  }
  std::vector<double> values_;
  size_t next_ = 0;
};

[[noreturn]] void fail(const std::string &message) {
  std::cerr << "dtnn-image-transform: error: " << message << "\n";
  std::exit(1);
}

void writePpm(const std::string &path, int64_t w, int64_t h, const uint8_t *rgb) {
  std::ofstream f(path, std::ios::binary);
  f << "P6\n" << w << " " << h << "\n255\n";
  f.write(reinterpret_cast<const char *>(rgb), std::streamsize(w * h * 3));
  if (!f) fail("cannot write " + path);
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 4) fail("usage: dtnn-image-transform OP FILE OUT.ppm [options]");
  std::string op = argv[1], file = argv[2], out = argv[3];
  ImageTransform t;
  PixelBox region;
  std::vector<double> draws;
  for (int i = 4; i < argc; ++i) {
    std::string a = argv[i];
    auto num = [&](int k) { return std::strtod(argv[i + k], nullptr); };
    if (a == "--size" && i + 2 < argc) t.height = int64_t(num(1)), t.width = int64_t(num(2)), i += 2;
    else if (a == "--scale" && i + 2 < argc) t.scale[0] = num(1), t.scale[1] = num(2), i += 2;
    else if (a == "--ratio" && i + 2 < argc) t.ratio[0] = num(1), t.ratio[1] = num(2), i += 2;
    else if (a == "--resize" && i + 1 < argc) t.resize = int64_t(num(1)), i += 1;
    else if (a == "--pad" && i + 1 < argc) t.pad = int64_t(num(1)), i += 1;
    else if (a == "--flip" && i + 1 < argc) t.flip = num(1), i += 1;
    else if (a == "--no-dct") t.dctScaling = false;
    else if (a == "--region" && i + 4 < argc)
      region = {int64_t(num(1)), int64_t(num(2)), int64_t(num(3)), int64_t(num(4))}, i += 4;
    else if (a == "--draws" && i + 1 < argc) {
      std::stringstream ss(argv[++i]);
      for (std::string v; std::getline(ss, v, ',');) draws.push_back(std::strtod(v.c_str(), nullptr));
    } else
      fail("unknown option " + a);
  }
  std::ifstream in(file, std::ios::binary);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), {});
  ReplayDraws d(draws);

  if (op == "decode") {
    Image img;
    DecodeOptions opts;
    opts.region = region;
    Expected<DecodedRegion> r = decodeImage(bytes.data(), bytes.size(), opts, img);
    if (!r) fail(file + ": " + r.error().message());
    std::cout << "at " << r->x << " " << r->y << "\n";
    writePpm(out, img.width, img.height, img.rgb.data());
    return 0;
  }
  std::vector<uint8_t> result(size_t(t.height * t.width * 3));
  bool flip = false;
  if (op == "padcrop") {
    // The decoded image as an in-memory sample [3, H, W], through its window.
    Image img;
    Expected<DecodedRegion> r = decodeImage(bytes.data(), bytes.size(), {}, img);
    if (!r) fail(file + ": " + r.error().message());
    t.crop = ImageTransform::Crop::PadRandom;
    PlanarWindow w = planarWindow(img.height, img.width, t, d);
    flip = w.flip;
    for (int64_t y = 0; y < t.height; ++y)
      for (int64_t x = 0; x < t.width; ++x) {
        int64_t sy = y + w.dy, sx = x + w.dx;
        bool inside = sy >= 0 && sy < img.height && sx >= 0 && sx < img.width;
        for (int c = 0; c < 3; ++c)
          result[size_t((y * t.width + x) * 3 + c)] =
              inside ? img.rgb[size_t((sy * img.width + sx) * 3 + c)] : 0;
      }
  } else {
    if (op == "rrc") {
      t.crop = ImageTransform::Crop::RandomResized;
      // The box from a copy of the draws, as the transform draws it first.
      ReplayDraws boxDraws(draws);
      Expected<ImageHeader> h = readImageHeader(bytes.data(), bytes.size());
      if (!h) fail(file + ": " + h.error().message());
      PixelBox b = randomResizedCropBox(h->width, h->height, t.scale, t.ratio, boxDraws);
      std::cout << "box " << b.x << " " << b.y << " " << b.width << " " << b.height << "\n";
    } else if (op == "center") {
      t.crop = ImageTransform::Crop::ResizeCenter;
    } else {
      fail("unknown operation " + op);
    }
    TransformScratch scratch;
    Expected<bool> f = transformImage(bytes.data(), bytes.size(), t, kDefaultMaxImagePixels, d,
                                      scratch, result.data());
    if (!f) fail(file + ": " + f.error().message());
    flip = *f;
  }
  if (flip) // the flip mirrors each row
    for (int64_t y = 0; y < t.height; ++y)
      for (int64_t x = 0; x < t.width / 2; ++x)
        for (int c = 0; c < 3; ++c)
          std::swap(result[size_t((y * t.width + x) * 3 + c)],
                    result[size_t((y * t.width + t.width - 1 - x) * 3 + c)]);
  std::cout << "flip " << flip << "\n";
  writePpm(out, t.width, t.height, result.data());
  return 0;
}
