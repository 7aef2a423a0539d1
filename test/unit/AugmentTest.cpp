// Tests of augmentation and the image path of the loader: torchvision's box arithmetic on given
// draws, the planar window of crop_flip, the Pillow-compatible resampler against a direct
// evaluation of its formula, per-sample draws, and batches that do not depend on the number of
// workers or on prefetching. Pixels against Pillow and torchvision themselves:
// test/lit/data/transforms.test.
#include "runtime/train/data/Augment.h"
#include "runtime/train/data/Loader.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

using namespace dtnn;

namespace {

// Hands out given values in order.
class ListDraws : public Draws {
public:
  explicit ListDraws(std::vector<double> v) : v_(std::move(v)) {}
  double uniform(double, double) override { return v_.at(i_++); }
  int64_t randint(int64_t lo, int64_t hi) override {
    double v = v_.at(i_++);
    EXPECT_GE(v, double(lo));
    EXPECT_LT(v, double(hi));
    return int64_t(v);
  }
  size_t used() const { return i_; }

private:
  std::vector<double> v_;
  size_t i_ = 0;
};

const double kScale[2] = {0.08, 1.0};
const double kRatio[2] = {3.0 / 4.0, 4.0 / 3.0};

} // namespace

TEST(Augment, RandomResizedCropTakesTheFirstBoxThatFits) {
  // Area 500*375 * 0.5, aspect exp(0) = 1: w = h = round(sqrt(93750)) = 306; then i, j.
  ListDraws d({0.5, 0.0, 10, 20});
  PixelBox b = randomResizedCropBox(500, 375, kScale, kRatio, d);
  EXPECT_EQ(b.width, 306);
  EXPECT_EQ(b.height, 306);
  EXPECT_EQ(b.y, 10);
  EXPECT_EQ(b.x, 20);
  EXPECT_EQ(d.used(), 4u);
}

TEST(Augment, RandomResizedCropRetriesThenFallsBackToTheCentre) {
  // Every try asks for the whole area at ratio 4/3 on a 100x10 image: h = round(sqrt(1000 *
  // 0.75)) = 27 > 10, so ten tries fail; the image's ratio 10 is above 4/3: h = 10,
  // w = round(10 * 4/3) = 13, centred.
  std::vector<double> draws;
  for (int i = 0; i < 10; ++i) draws.insert(draws.end(), {1.0, std::log(4.0 / 3.0)});
  ListDraws d(draws);
  PixelBox b = randomResizedCropBox(100, 10, kScale, kRatio, d);
  EXPECT_EQ(d.used(), 20u);
  EXPECT_EQ(b.width, 13);
  EXPECT_EQ(b.height, 10);
  EXPECT_EQ(b.x, (100 - 13) / 2);
  EXPECT_EQ(b.y, 0);
}

TEST(Augment, ResizeCenterFollowsTorchvisionsRounding) {
  // 500x375 to a shorter side of 256: 256 * 500 / 375 = 341.33 is truncated to 341; the crop's
  // left edge round((341 - 224) / 2) = round(58.5) = 58 (half to even), its top 16.
  ResizeCenterPlan p = resizeCenterPlan(500, 375, 256, 224, 224);
  EXPECT_EQ(p.resizedWidth, 341);
  EXPECT_EQ(p.resizedHeight, 256);
  EXPECT_EQ(p.left, 58);
  EXPECT_EQ(p.top, 16);
  ResizeCenterPlan tall = resizeCenterPlan(375, 500, 256, 224, 224);
  EXPECT_EQ(tall.resizedWidth, 256);
  EXPECT_EQ(tall.resizedHeight, 341);
}

TEST(Augment, PadCropWindowAndFlip) {
  ImageTransform t;
  t.crop = ImageTransform::Crop::PadRandom;
  t.pad = 4;
  t.flip = 0.5;
  t.height = t.width = 28;
  ListDraws d({0, 8, 0.25}); // top row of the padded image, rightmost column, flipped
  PlanarWindow w = planarWindow(28, 28, t, d);
  EXPECT_EQ(w.dy, -4);
  EXPECT_EQ(w.dx, 4);
  EXPECT_TRUE(w.flip);
  ListDraws noFlip({3, 3, 0.75});
  EXPECT_FALSE(planarWindow(28, 28, t, noFlip).flip);
}

TEST(Augment, SampleDrawsAreAStreamOfSeedEpochAndSample) {
  auto first = [](uint64_t seed, int64_t epoch, int64_t sample) {
    SampleDraws d(seed, epoch, sample);
    return d.uniform(0.0, 1.0);
  };
  EXPECT_EQ(first(1, 2, 3), first(1, 2, 3));
  EXPECT_NE(first(1, 2, 3), first(1, 2, 4));
  EXPECT_NE(first(1, 2, 3), first(1, 3, 3));
  EXPECT_NE(first(1, 2, 3), first(2, 2, 3));
  SampleDraws d(7, 0, 0);
  for (int i = 0; i < 1000; ++i) {
    double u = d.uniform(0.08, 1.0);
    EXPECT_GE(u, 0.08);
    EXPECT_LT(u, 1.0);
    int64_t k = d.randint(3, 9);
    EXPECT_GE(k, 3);
    EXPECT_LT(k, 9);
  }
}

TEST(Resample, AgreesWithItsFormulaWithinOneLevel) {
  // A direct, double-precision evaluation of the antialiased triangle filter over the box, in
  // two passes with rounding between them as the resampler does.
  const int64_t W = 37, H = 23;
  std::vector<uint8_t> src(size_t(W * H * 3));
  for (size_t i = 0; i < src.size(); ++i) src[i] = uint8_t((i * 7919) % 251);
  RgbView view{src.data(), W, H, W * 3};
  auto weights = [](int64_t in, double x0, double x1, int64_t out, int64_t o) {
    double scale = (x1 - x0) / double(out), fs = std::max(scale, 1.0);
    double centre = x0 + (double(o) + 0.5) * scale;
    std::vector<double> w(size_t(in), 0.0);
    double total = 0;
    for (int64_t x = 0; x < in; ++x) {
      double d = std::fabs((double(x) + 0.5 - centre) / fs);
      if (double(x) >= std::floor(centre - fs + 0.5) && double(x) < std::floor(centre + fs + 0.5))
        total += w[size_t(x)] = d < 1 ? 1 - d : 0;
    }
    for (double &v : w) v /= total;
    return w;
  };
  for (auto [ow, oh, x0, y0, x1, y1] : std::vector<std::tuple<int64_t, int64_t, double, double,
                                                              double, double>>{
           {13, 9, 0, 0, 37, 23}, {50, 40, 0, 0, 37, 23}, {11, 17, 3.5, 2.25, 30.75, 21}}) {
    ResampleSpec spec{ow, oh, x0, y0, x1, y1, 0, 0, ow, oh};
    ResampleScratch scratch;
    std::vector<uint8_t> out(size_t(ow * oh * 3));
    resampleBilinear(view, spec, scratch, out.data());
    // Horizontal pass into rounded rows, then vertical.
    std::vector<double> rows(size_t(H * ow * 3));
    for (int64_t y = 0; y < H; ++y)
      for (int64_t o = 0; o < ow; ++o) {
        auto w = weights(W, x0, x1, ow, o);
        for (int c = 0; c < 3; ++c) {
          double s = 0;
          for (int64_t x = 0; x < W; ++x) s += w[size_t(x)] * src[size_t((y * W + x) * 3 + c)];
          rows[size_t((y * ow + o) * 3 + c)] = std::clamp(std::round(s), 0.0, 255.0);
        }
      }
    for (int64_t o = 0; o < oh; ++o) {
      auto w = weights(H, y0, y1, oh, o);
      for (int64_t x = 0; x < ow; ++x)
        for (int c = 0; c < 3; ++c) {
          double s = 0;
          for (int64_t y = 0; y < H; ++y) s += w[size_t(y)] * rows[size_t((y * ow + x) * 3 + c)];
          EXPECT_NEAR(out[size_t((o * ow + x) * 3 + c)], std::clamp(std::round(s), 0.0, 255.0), 1)
              << ow << "x" << oh << " at " << x << "," << o;
        }
    }
  }
}

TEST(Resample, ACropOfTheOutputIsThatPartOfTheWholeOutput) {
  const int64_t W = 41, H = 29;
  std::vector<uint8_t> src(size_t(W * H * 3));
  for (size_t i = 0; i < src.size(); ++i) src[i] = uint8_t((i * 104729) % 256);
  RgbView view{src.data(), W, H, W * 3};
  ResampleScratch scratch;
  std::vector<uint8_t> whole(size_t(30 * 20 * 3)), part(size_t(12 * 7 * 3));
  resampleBilinear(view, {30, 20, 0, 0, double(W), double(H), 0, 0, 30, 20}, scratch, whole.data());
  resampleBilinear(view, {30, 20, 0, 0, double(W), double(H), 9, 5, 12, 7}, scratch, part.data());
  for (int64_t y = 0; y < 7; ++y)
    for (int64_t x = 0; x < 12 * 3; ++x)
      EXPECT_EQ(part[size_t(y * 36 + x)], whole[size_t((y + 5) * 90 + 27 + x)]);
}

TEST(AugmentLoader, BatchesAreTheSameWithAnyWorkersAndPrefetch) {
  Dataset data;
  data.count = 50;
  data.sampleShape = {1, 6, 6};
  data.numClasses = 50;
  for (int64_t i = 0; i < 50; ++i) {
    data.labels.push_back(int32_t(i));
    for (int k = 0; k < 36; ++k) data.pixels.push_back(uint8_t(i * 5 + k));
  }
  auto batches = [&](bool prefetch, int workers, int64_t epoch) {
    LoaderOptions o;
    o.batch = 8;
    o.seed = 3;
    o.prefetch = prefetch;
    o.workers = workers;
    o.transform.crop = ImageTransform::Crop::PadRandom;
    o.transform.pad = 2;
    o.transform.flip = 0.5;
    o.transform.height = o.transform.width = 6;
    BatchLoader loader(data, {}, o);
    loader.startEpoch(epoch);
    std::vector<float> all;
    for (Batch b; loader.next(b);) all.insert(all.end(), b.images.begin(), b.images.end());
    EXPECT_FALSE(loader.takeError());
    return all;
  };
  std::vector<float> one = batches(false, 1, 1);
  EXPECT_EQ(one.size(), 50u * 36u);
  EXPECT_EQ(batches(true, 1, 1), one);
  EXPECT_EQ(batches(true, 3, 1), one);
  EXPECT_NE(batches(false, 1, 2), one); // another epoch, other crops
  // Augmentation moved pixels: some sample differs from its stored image.
  LoaderOptions plain;
  plain.batch = 8;
  plain.seed = 3;
  plain.prefetch = false;
  BatchLoader loader(data, {}, plain);
  loader.startEpoch(1);
  std::vector<float> unaugmented;
  for (Batch b; loader.next(b);) unaugmented.insert(unaugmented.end(), b.images.begin(), b.images.end());
  EXPECT_NE(unaugmented, one);
}
