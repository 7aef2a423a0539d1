// Tests of the JPEG and PNG decoders on images made in memory with libjpeg and libpng: sizes,
// colours, region decodes against cropped whole decodes (at every subsampling and DCT scale),
// the choice of scale, and damaged, foreign and oversized files.
#include "runtime/train/data/ImageDecode.h"

#include <gtest/gtest.h>

#include <cstdio>
// jpeglib.h needs FILE and size_t declared before it.
#include <jpeglib.h>
#include <png.h>

#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace dtnn {
namespace {

using Bytes = std::vector<uint8_t>;

// A textured image of `channels` samples a pixel: gradients, a fine pattern and noise, so that
// every decoding difference shows.
Bytes texture(int width, int height, int channels, uint32_t seed) {
  std::mt19937 rng(seed);
  Bytes px(size_t(width) * height * channels);
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x)
      for (int c = 0; c < channels; ++c) {
        int v = (x * (3 + c) + y * (5 - c)) + ((x ^ y) & 7) * 9 + int(rng() % 48);
        if (((x / 5) + (y / 3) + c) % 4 == 0) v += 90;
        px[(size_t(y) * width + x) * channels + c] = uint8_t(v & 255);
      }
  return px;
}

// A smooth image (gradients and a little noise) that JPEG keeps close to its samples.
Bytes smooth(int width, int height, int channels) {
  std::mt19937 rng(11);
  Bytes px(size_t(width) * height * channels);
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x)
      for (int c = 0; c < channels; ++c) {
        int v = 20 + (x * (c + 1) + y * (3 - c % 3)) * 200 / (width + 3 * height) + int(rng() % 6);
        px[(size_t(y) * width + x) * channels + c] = uint8_t(std::min(v, 255));
      }
  return px;
}

// How a test JPEG is written.
struct JpegSpec {
  int width = 97, height = 61;
  J_COLOR_SPACE input = JCS_RGB;     // the samples given
  J_COLOR_SPACE stored = JCS_YCbCr;  // the colour space in the file
  int h = 2, v = 2;                  // the first component's sampling factors
  bool progressive = false;
  int quality = 92;
  bool everyBitAScan = false; // progressive, one scan per bit of each coefficient
};

// The number of samples a pixel of a colour space has.
int channelsOf(J_COLOR_SPACE space) {
  return space == JCS_GRAYSCALE ? 1 : space == JCS_CMYK ? 4 : 3;
}

// Compresses `pixels` (spec.input samples) into a JPEG file.
Bytes makeJpeg(const JpegSpec &spec, const Bytes &pixels) {
  jpeg_compress_struct c;
  jpeg_error_mgr err;
  c.err = jpeg_std_error(&err);
  jpeg_create_compress(&c);
  unsigned char *buf = nullptr;
  unsigned long len = 0;
  jpeg_mem_dest(&c, &buf, &len);
  c.image_width = JDIMENSION(spec.width);
  c.image_height = JDIMENSION(spec.height);
  c.input_components = channelsOf(spec.input);
  c.in_color_space = spec.input;
  jpeg_set_defaults(&c);
  jpeg_set_colorspace(&c, spec.stored);
  jpeg_set_quality(&c, spec.quality, TRUE);
  c.comp_info[0].h_samp_factor = spec.h;
  c.comp_info[0].v_samp_factor = spec.v;
  for (int i = 1; i < c.num_components; ++i)
    c.comp_info[i].h_samp_factor = c.comp_info[i].v_samp_factor = 1;
  if (spec.progressive) jpeg_simple_progression(&c);
  // Each component, each coefficient: a first scan of its top bits, then one scan per bit.
  std::vector<jpeg_scan_info> scans;
  for (int ci = 0; spec.everyBitAScan && ci < c.num_components; ++ci)
    for (int k = 0; k < DCTSIZE2; ++k)
      for (int al = 10; al >= 0; --al)
        scans.push_back({1, {ci}, k, k, al == 10 ? 0 : al + 1, al});
  if (spec.everyBitAScan) {
    c.scan_info = scans.data();
    c.num_scans = int(scans.size());
  }
  jpeg_start_compress(&c, TRUE);
  const size_t stride = size_t(spec.width) * c.input_components;
  while (c.next_scanline < c.image_height) {
    JSAMPROW row = const_cast<uint8_t *>(pixels.data()) + c.next_scanline * stride;
    jpeg_write_scanlines(&c, &row, 1);
  }
  jpeg_finish_compress(&c);
  jpeg_destroy_compress(&c);
  Bytes file(buf, buf + len);
  std::free(buf);
  return file;
}

// A test JPEG of textured content.
Bytes makeJpeg(const JpegSpec &spec) {
  return makeJpeg(spec, texture(spec.width, spec.height, channelsOf(spec.input), 7));
}

// The PNG writer's output hook: appends to a Bytes.
void appendPng(png_structp png, png_bytep data, size_t n) {
  Bytes *out = static_cast<Bytes *>(png_get_io_ptr(png));
  out->insert(out->end(), data, data + n);
}

// Writes a PNG file from rows of raw samples as the file stores them (packed below 8 bits,
// big-endian at 16), with an optional palette. libpng aborts on an error: no setjmp is armed.
Bytes makePng(int width, int height, int depth, int colorType, const Bytes &raw,
              const std::vector<png_color> &palette = {}, bool interlaced = false) {
  Bytes file;
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png_create_info_struct(png);
  png_set_write_fn(png, &file, appendPng, nullptr);
  png_set_IHDR(png, info, png_uint_32(width), png_uint_32(height), depth, colorType,
               interlaced ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
               PNG_FILTER_TYPE_DEFAULT);
  if (!palette.empty()) png_set_PLTE(png, info, palette.data(), int(palette.size()));
  png_write_info(png, info);
  size_t stride = raw.size() / size_t(height);
  std::vector<png_bytep> rows(static_cast<size_t>(height));
  for (int y = 0; y < height; ++y) rows[size_t(y)] = const_cast<uint8_t *>(&raw[y * stride]);
  png_write_image(png, rows.data());
  png_write_end(png, info);
  png_destroy_write_struct(&png, &info);
  return file;
}

// Decodes, failing the test on an error.
DecodedRegion decodeOk(const Bytes &file, const DecodeOptions &opts, Image &out) {
  Expected<DecodedRegion> got = decodeImage(file.data(), file.size(), opts, out);
  EXPECT_TRUE(bool(got)) << got.error().message();
  return got ? *got : DecodedRegion{};
}

// The message of a decode that must fail.
std::string decodeError(const Bytes &file, const DecodeOptions &opts = {}) {
  Image out;
  Expected<DecodedRegion> got = decodeImage(file.data(), file.size(), opts, out);
  EXPECT_FALSE(bool(got));
  return got ? std::string() : got.error().message();
}

// The message of a header read that must fail.
std::string headerError(const Bytes &file, int64_t maxPixels = kDefaultMaxImagePixels) {
  Expected<ImageHeader> got = readImageHeader(file.data(), file.size(), maxPixels);
  EXPECT_FALSE(bool(got));
  return got ? std::string() : got.error().message();
}

// The mean absolute difference between two equally sized sample buffers.
double meanAbsDiff(const Bytes &a, const Bytes &b) {
  EXPECT_EQ(a.size(), b.size());
  double sum = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) sum += std::abs(int(a[i]) - int(b[i]));
  return a.empty() ? 0 : sum / double(a.size());
}

// Whether the decoded region `got` (placed at `at`) holds exactly the pixels of `whole` in the
// scaled box [x0, x1) x [y0, y1).
::testing::AssertionResult sameRegion(const Image &whole, const Image &got,
                                      const DecodedRegion &at, int64_t x0, int64_t y0,
                                      int64_t x1, int64_t y1) {
  if (at.x > x0 || at.y > y0 || at.x + got.width < x1 || at.y + got.height < y1)
    return ::testing::AssertionFailure()
           << "decoded " << got.width << " x " << got.height << " at (" << at.x << ", " << at.y
           << ") does not cover [" << x0 << ", " << x1 << ") x [" << y0 << ", " << y1 << ")";
  for (int64_t y = y0; y < y1; ++y)
    for (int64_t x = x0; x < x1; ++x)
      for (int c = 0; c < 3; ++c) {
        uint8_t want = whole.rgb[size_t((y * whole.width + x) * 3 + c)];
        uint8_t have = got.rgb[size_t(((y - at.y) * got.width + (x - at.x)) * 3 + c)];
        if (want != have)
          return ::testing::AssertionFailure()
                 << "pixel (" << x << ", " << y << ") channel " << c << ": " << int(have)
                 << " instead of " << int(want);
      }
  return ::testing::AssertionSuccess();
}

// Decodes `count` random regions of `file` at scale 1/denom and compares each with the whole
// decode at that scale.
void checkRandomRegions(const Bytes &file, int64_t width, int64_t height, int64_t denom,
                        int count, uint32_t seed) {
  Image whole;
  DecodeOptions all;
  all.minWidth = width / denom;
  all.minHeight = height / denom;
  DecodedRegion w = decodeOk(file, all, whole);
  ASSERT_EQ(w.scale, 1.0 / double(denom));
  ASSERT_EQ(whole.width, (width + denom - 1) / denom);
  ASSERT_EQ(whole.height, (height + denom - 1) / denom);
  std::mt19937 rng(seed);
  Image got;
  for (int i = 0; i < count; ++i) {
    // Regions at least denom pixels each way, so that the scale can be asked for.
    PixelBox r;
    r.width = denom + int64_t(rng() % uint32_t(width - denom + 1));
    r.height = denom + int64_t(rng() % uint32_t(height - denom + 1));
    r.x = int64_t(rng() % uint32_t(width - r.width + 1));
    r.y = int64_t(rng() % uint32_t(height - r.height + 1));
    DecodeOptions opts;
    opts.region = r;
    opts.minWidth = r.width / denom;
    opts.minHeight = r.height / denom;
    DecodedRegion at = decodeOk(file, opts, got);
    ASSERT_EQ(at.scale, 1.0 / double(denom));
    ASSERT_EQ(at.scaledWidth, whole.width);
    ASSERT_EQ(at.scaledHeight, whole.height);
    int64_t x0 = r.x / denom, y0 = r.y / denom;
    int64_t x1 = std::min((r.x + r.width + denom - 1) / denom, whole.width);
    int64_t y1 = std::min((r.y + r.height + denom - 1) / denom, whole.height);
    ASSERT_TRUE(sameRegion(whole, got, at, x0, y0, x1, y1))
        << "region " << r.width << " x " << r.height << " at (" << r.x << ", " << r.y
        << "), scale 1/" << denom;
  }
}

// The JPEG variants the region tests cover.
std::vector<std::pair<std::string, JpegSpec>> jpegVariants() {
  std::vector<std::pair<std::string, JpegSpec>> v;
  for (int size = 0; size < 2; ++size) {
    JpegSpec s;
    if (size) s.width = 203, s.height = 157;
    std::string tag = size ? " 203x157" : " 97x61";
    s.h = 1, s.v = 1;
    v.push_back({"4:4:4" + tag, s});
    s.h = 2, s.v = 1;
    v.push_back({"4:2:2" + tag, s});
    s.h = 2, s.v = 2;
    v.push_back({"4:2:0" + tag, s});
    s.h = 1, s.v = 2;
    v.push_back({"4:4:0" + tag, s});
    s.h = 4, s.v = 1;
    v.push_back({"4:1:1" + tag, s});
    s.h = 2, s.v = 2;
    s.progressive = true;
    v.push_back({"progressive 4:2:0" + tag, s});
    s.progressive = false;
    s.input = s.stored = JCS_GRAYSCALE;
    s.h = s.v = 1;
    v.push_back({"greyscale" + tag, s});
    s.input = s.stored = JCS_CMYK;
    s.h = s.v = 2;
    v.push_back({"CMYK" + tag, s});
  }
  return v;
}

TEST(ImageDecode, HeaderReadsFormatAndSize) {
  JpegSpec spec;
  Bytes jpeg = makeJpeg(spec);
  Expected<ImageHeader> h = readImageHeader(jpeg.data(), jpeg.size());
  ASSERT_TRUE(bool(h)) << h.error().message();
  EXPECT_EQ(h->format, ImageFormat::Jpeg);
  EXPECT_EQ(h->width, 97);
  EXPECT_EQ(h->height, 61);

  Bytes png = makePng(33, 17, 8, PNG_COLOR_TYPE_RGB, texture(33, 17, 3, 1));
  h = readImageHeader(png.data(), png.size());
  ASSERT_TRUE(bool(h)) << h.error().message();
  EXPECT_EQ(h->format, ImageFormat::Png);
  EXPECT_EQ(h->width, 33);
  EXPECT_EQ(h->height, 17);
}

TEST(ImageDecode, FullJpegDecodeHasTheSizeAndColours) {
  for (const auto &[name, spec] : jpegVariants()) {
    SCOPED_TRACE(name);
    Bytes source = smooth(spec.width, spec.height, channelsOf(spec.input));
    Bytes file = makeJpeg(spec, source);
    Image img;
    DecodedRegion at = decodeOk(file, {}, img);
    EXPECT_EQ(at.scale, 1.0);
    EXPECT_EQ(at.x, 0);
    EXPECT_EQ(at.y, 0);
    EXPECT_EQ(at.scaledWidth, spec.width);
    EXPECT_EQ(at.scaledHeight, spec.height);
    ASSERT_EQ(img.width, spec.width);
    ASSERT_EQ(img.height, spec.height);
    ASSERT_EQ(img.rgb.size(), size_t(spec.width * spec.height * 3));
    // The colours the source samples stand for: grey replicated; inverted CMYK as Pillow reads
    // it, R = C * K / 255 in the stored (Adobe) values.
    Bytes want(img.rgb.size());
    for (size_t i = 0; i < size_t(spec.width * spec.height); ++i)
      for (int c = 0; c < 3; ++c) {
        const uint8_t *p = &source[i * channelsOf(spec.input)];
        want[i * 3 + c] = spec.input == JCS_GRAYSCALE ? p[0]
                          : spec.input == JCS_CMYK    ? uint8_t(p[c] * p[3] / 255)
                                                      : p[c];
      }
    EXPECT_LT(meanAbsDiff(img.rgb, want), 3.0);
  }
}

TEST(ImageDecode, JpegRegionEqualsCroppedFullDecode) {
  uint32_t seed = 1;
  for (const auto &[name, spec] : jpegVariants()) {
    SCOPED_TRACE(name);
    Bytes file = makeJpeg(spec);
    checkRandomRegions(file, spec.width, spec.height, 1, 150, seed++);
  }
}

TEST(ImageDecode, ScaledJpegRegionEqualsCroppedScaledDecode) {
  uint32_t seed = 100;
  for (const auto &[name, spec] : jpegVariants())
    for (int64_t denom : {2, 4, 8}) {
      SCOPED_TRACE(name + " at 1/" + std::to_string(denom));
      Bytes file = makeJpeg(spec);
      checkRandomRegions(file, spec.width, spec.height, denom, 60, seed++);
    }
}

TEST(ImageDecode, JpegRegionAtEdgesAndBlockBoundaries) {
  JpegSpec spec;
  spec.width = 203, spec.height = 157;
  Bytes file = makeJpeg(spec);
  Image whole, got;
  decodeOk(file, {}, whole);
  // Starts and ends on iMCU boundaries (16 pixels at 4:2:0), one pixel either side, and the
  // image's own edges.
  for (int64_t x : {0, 1, 15, 16, 17, 31, 32, 48, 186})
    for (int64_t w : {1, 2, 15, 16, 17, 203 - 186}) {
      PixelBox r{x, 16, w, 17};
      if (x + w > spec.width) continue;
      DecodeOptions opts;
      opts.region = r;
      DecodedRegion at = decodeOk(file, opts, got);
      EXPECT_LE(at.x, x);
      EXPECT_EQ(at.y, 16);
      EXPECT_TRUE(sameRegion(whole, got, at, x, 16, x + w, 33)) << x << " " << w;
    }
  for (int64_t y : {0, 1, 7, 8, 15, 16, 17, 31, 32, 140, 156}) {
    PixelBox r{20, y, 30, spec.height - y};
    DecodeOptions opts;
    opts.region = r;
    DecodedRegion at = decodeOk(file, opts, got);
    EXPECT_EQ(at.y, y);
    EXPECT_EQ(got.height, spec.height - y);
    EXPECT_TRUE(sameRegion(whole, got, at, 20, y, 50, spec.height)) << y;
  }
}

TEST(ImageDecode, ScaleIsTheSmallestThatKeepsTheMinimum) {
  JpegSpec spec; // 97 x 61
  Bytes file = makeJpeg(spec);
  Image img;
  struct Case {
    PixelBox region;
    int64_t minWidth, minHeight, denom;
  };
  const Case cases[] = {
      {{}, 0, 0, 1},           // no minimum: full scale
      {{}, 12, 7, 8},          // 97 >= 12 * 8, 61 >= 7 * 8
      {{}, 13, 7, 4},          // 97 < 13 * 8
      {{}, 12, 8, 4},          // 61 < 8 * 8
      {{}, 24, 15, 4},         // 96 <= 97, 60 <= 61
      {{}, 25, 15, 2},         // 97 < 25 * 4
      {{}, 48, 30, 2},         //
      {{}, 49, 30, 1},         // 97 < 49 * 2
      {{}, 200, 200, 1},       // larger than the image: full scale
      {{10, 10, 40, 40}, 10, 10, 4},
      {{10, 10, 40, 40}, 5, 5, 8},
      {{10, 10, 40, 40}, 5, 0, 8},
      {{10, 10, 40, 40}, 0, 11, 2},
      {{10, 10, 40, 40}, 21, 1, 1},
  };
  for (const Case &c : cases) {
    DecodeOptions opts;
    opts.region = c.region;
    opts.minWidth = c.minWidth;
    opts.minHeight = c.minHeight;
    DecodedRegion at = decodeOk(file, opts, img);
    SCOPED_TRACE(std::to_string(c.minWidth) + " x " + std::to_string(c.minHeight));
    EXPECT_EQ(at.scale, 1.0 / double(c.denom));
    EXPECT_EQ(at.scaledWidth, (97 + c.denom - 1) / c.denom);
    EXPECT_EQ(at.scaledHeight, (61 + c.denom - 1) / c.denom);
    int64_t rw = c.region.width ? c.region.width : 97, rh = c.region.width ? c.region.height : 61;
    int64_t x0 = c.region.x / c.denom, y0 = c.region.y / c.denom;
    int64_t x1 = (c.region.x + rw + c.denom - 1) / c.denom;
    int64_t y1 = (c.region.y + rh + c.denom - 1) / c.denom;
    EXPECT_LE(at.x, x0);
    EXPECT_EQ(at.y, y0);
    EXPECT_GE(at.x + img.width, x1);
    EXPECT_EQ(at.y + img.height, y1);
    EXPECT_EQ(img.rgb.size(), size_t(img.width * img.height * 3));
  }
}

TEST(ImageDecode, TruncatedJpegFails) {
  for (bool progressive : {false, true}) {
    JpegSpec spec;
    spec.progressive = progressive;
    Bytes file = makeJpeg(spec);
    file.resize(file.size() / 2);
    std::string message = decodeError(file);
    EXPECT_NE(message.find("is a corrupt JPEG: Premature end of JPEG file"), std::string::npos)
        << message;
  }
  // Cut inside the header.
  Bytes head = makeJpeg(JpegSpec{});
  head.resize(40);
  EXPECT_NE(headerError(head).find("is a corrupt JPEG"), std::string::npos);
  EXPECT_NE(decodeError(Bytes{0xFF, 0xD8, 0xFF}).find("is a corrupt JPEG"), std::string::npos);
}

TEST(ImageDecode, JpegRegionAboveTheDamageDecodes) {
  // The rest of the file is never read: a region in the intact part of a baseline file decodes.
  JpegSpec spec;
  spec.width = 203, spec.height = 157;
  Bytes file = makeJpeg(spec);
  Image whole, got;
  decodeOk(file, {}, whole);
  file.resize(file.size() * 3 / 4);
  DecodeOptions opts;
  opts.region = {30, 10, 50, 20};
  DecodedRegion at = decodeOk(file, opts, got);
  EXPECT_TRUE(sameRegion(whole, got, at, 30, 10, 80, 30));
}

TEST(ImageDecode, CorruptJpegDataFails) {
  Bytes file = makeJpeg(JpegSpec{});
  // A marker in the middle of the entropy-coded data ends the scan early.
  size_t sos = 0;
  for (size_t i = 0; i + 1 < file.size(); ++i)
    if (file[i] == 0xFF && file[i + 1] == 0xDA) sos = i;
  ASSERT_GT(sos, 0u);
  size_t mid = sos + (file.size() - sos) / 2;
  file[mid] = 0xFF;
  file[mid + 1] = 0xD9;
  std::string message = decodeError(file);
  EXPECT_NE(message.find("is a corrupt JPEG: Corrupt JPEG data"), std::string::npos) << message;
}

TEST(ImageDecode, JpegMetadataWarningsAreHarmless) {
  // An unknown JFIF major version draws a warning about metadata only.
  JpegSpec spec;
  Bytes file = makeJpeg(spec);
  Image whole, got;
  decodeOk(file, {}, whole);
  ASSERT_EQ(std::memcmp(&file[6], "JFIF", 5), 0);
  file[11] = 2;
  decodeOk(file, {}, got);
  EXPECT_EQ(got.rgb, whole.rgb);
}

TEST(ImageDecode, JpegWithTooManyScansFails) {
  // 64 coefficients x 11 bits a component: 704 scans for greyscale, 2112 for three components.
  JpegSpec spec;
  spec.width = spec.height = 16;
  spec.everyBitAScan = true;
  spec.input = spec.stored = JCS_GRAYSCALE;
  spec.h = spec.v = 1;
  Image grey;
  decodeOk(makeJpeg(spec), {}, grey);
  EXPECT_EQ(grey.width, 16);
  spec.input = JCS_RGB;
  spec.stored = JCS_YCbCr;
  EXPECT_EQ(decodeError(makeJpeg(spec)), "is a corrupt JPEG: more than 1000 scans");
}

TEST(ImageDecode, ForeignBytesAreNotAnImage) {
  const char *text = "hello, this is not an image\n";
  Bytes garbage(text, text + std::strlen(text));
  EXPECT_EQ(decodeError(garbage), "is not a JPEG or PNG image");
  EXPECT_EQ(headerError(garbage), "is not a JPEG or PNG image");
  EXPECT_EQ(decodeError(Bytes{}), "is not a JPEG or PNG image");
  EXPECT_EQ(headerError(Bytes{}), "is not a JPEG or PNG image");
  EXPECT_EQ(decodeError(Bytes{0xFF, 0xD8}), "is not a JPEG or PNG image");
  EXPECT_EQ(decodeError(Bytes{0x89, 'P', 'N', 'G'}), "is not a JPEG or PNG image");
}

TEST(ImageDecode, HugeJpegIsRefusedBeforeDecoding) {
  JpegSpec spec;
  spec.width = spec.height = 16;
  Bytes file = makeJpeg(spec);
  size_t sof = 0;
  for (size_t i = 0; i + 1 < file.size(); ++i)
    if (file[i] == 0xFF && file[i + 1] == 0xC0) sof = i;
  ASSERT_GT(sof, 0u);
  // SOF0: FF C0, length (2), precision (1), height (2), width (2).
  file[sof + 5] = 30000 >> 8, file[sof + 6] = 30000 & 255;
  file[sof + 7] = 30000 >> 8, file[sof + 8] = 30000 & 255;
  const std::string want = "has 30000 x 30000 pixels, more than the limit of 178956970";
  EXPECT_EQ(headerError(file), want);
  Image out;
  Expected<DecodedRegion> got = decodeImage(file.data(), file.size(), {}, out);
  ASSERT_FALSE(bool(got));
  EXPECT_EQ(got.error().message(), want);
  EXPECT_EQ(out.rgb.capacity(), 0u);
}

TEST(ImageDecode, PixelLimitIsInclusive) {
  JpegSpec spec; // 97 x 61 = 5917 pixels
  Bytes jpeg = makeJpeg(spec);
  Bytes png = makePng(97, 61, 8, PNG_COLOR_TYPE_RGB, texture(97, 61, 3, 2));
  for (const Bytes *file : {&jpeg, &png}) {
    EXPECT_TRUE(bool(readImageHeader(file->data(), file->size(), 5917)));
    EXPECT_EQ(headerError(*file, 5916), "has 97 x 61 pixels, more than the limit of 5916");
    DecodeOptions opts;
    opts.maxPixels = 5916;
    EXPECT_EQ(decodeError(*file, opts), "has 97 x 61 pixels, more than the limit of 5916");
  }
}

TEST(ImageDecode, RegionOutsideTheImageFails) {
  Bytes jpeg = makeJpeg(JpegSpec{});
  Bytes png = makePng(97, 61, 8, PNG_COLOR_TYPE_RGB, texture(97, 61, 3, 2));
  for (const Bytes *file : {&jpeg, &png})
    for (PixelBox r : {PixelBox{90, 0, 8, 10}, PixelBox{0, 60, 5, 2}, PixelBox{-1, 0, 5, 5},
                       PixelBox{0, 0, 5, 0}}) {
      DecodeOptions opts;
      opts.region = r;
      EXPECT_NE(decodeError(*file, opts).find("which does not hold the region"),
                std::string::npos);
    }
}

// A PNG case: the file's raw samples and the RGB that Pillow's convert("RGB") makes of them.
struct PngCase {
  std::string name;
  int depth, colorType;
  Bytes raw, rgb;
  std::vector<png_color> palette;
};

// PNG cases of every colour type and depth, w x h pixels.
std::vector<PngCase> pngCases(int w, int h) {
  std::vector<PngCase> cases;
  const size_t n = size_t(w) * h;
  auto add = [&](std::string name, int depth, int type, int channels) {
    PngCase c{std::move(name), depth, type, texture(w, h, channels * (depth / 8), 3), Bytes(n * 3),
              {}};
    cases.push_back(std::move(c));
    return &cases.back();
  };
  PngCase *c = add("RGB", 8, PNG_COLOR_TYPE_RGB, 3);
  c->rgb = c->raw;
  c = add("grey", 8, PNG_COLOR_TYPE_GRAY, 1);
  for (size_t i = 0; i < n * 3; ++i) c->rgb[i] = c->raw[i / 3];
  c = add("RGBA", 8, PNG_COLOR_TYPE_RGB_ALPHA, 4);
  for (size_t i = 0; i < n * 3; ++i) c->rgb[i] = c->raw[i / 3 * 4 + i % 3];
  c = add("grey-alpha", 8, PNG_COLOR_TYPE_GRAY_ALPHA, 2);
  for (size_t i = 0; i < n * 3; ++i) c->rgb[i] = c->raw[i / 3 * 2];
  // 16 bits: the high byte, except grey, clipped at 255.
  c = add("RGB 16", 16, PNG_COLOR_TYPE_RGB, 3);
  for (size_t i = 0; i < n * 3; ++i) c->rgb[i] = c->raw[i * 2];
  c = add("RGBA 16", 16, PNG_COLOR_TYPE_RGB_ALPHA, 4);
  for (size_t i = 0; i < n * 3; ++i) c->rgb[i] = c->raw[(i / 3 * 4 + i % 3) * 2];
  c = add("grey-alpha 16", 16, PNG_COLOR_TYPE_GRAY_ALPHA, 2);
  for (size_t i = 0; i < n * 3; ++i) c->rgb[i] = c->raw[i / 3 * 4];
  c = add("grey 16", 16, PNG_COLOR_TYPE_GRAY, 1);
  for (size_t i = 0; i < n; ++i) {
    // Mostly small values, so that clipping and passing through both show.
    if (i % 3) c->raw[i * 2] = 0;
    int v = c->raw[i * 2] << 8 | c->raw[i * 2 + 1];
    for (int k = 0; k < 3; ++k) c->rgb[i * 3 + k] = uint8_t(std::min(v, 255));
  }
  // Palette and low-depth grey: one packed index or level a pixel.
  for (int depth : {1, 2, 4, 8}) {
    int levels = 1 << depth;
    for (bool pal : {false, true}) {
      c = add((pal ? "palette " : "grey ") + std::to_string(depth), depth,
              pal ? PNG_COLOR_TYPE_PALETTE : PNG_COLOR_TYPE_GRAY, 1);
      if (!pal && depth == 8) {
        cases.pop_back();
        continue;
      }
      Bytes idx = texture(w, h, 1, 9);
      for (int i = 0; i < levels; ++i)
        c->palette.push_back({uint8_t(i * 37 + 5), uint8_t(255 - i * 11), uint8_t(i * i)});
      size_t stride = (size_t(w) * depth + 7) / 8;
      c->raw.assign(stride * h, 0);
      for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) {
          int v = idx[size_t(y) * w + x] % levels;
          size_t bit = size_t(x) * depth;
          c->raw[y * stride + bit / 8] |= uint8_t(v << (8 - depth - bit % 8));
          size_t o = (size_t(y) * w + x) * 3;
          if (pal) {
            c->rgb[o] = c->palette[v].red, c->rgb[o + 1] = c->palette[v].green;
            c->rgb[o + 2] = c->palette[v].blue;
          } else {
            c->rgb[o] = c->rgb[o + 1] = c->rgb[o + 2] = uint8_t(v * 255 / (levels - 1));
          }
        }
      if (!pal) c->palette.clear();
    }
  }
  return cases;
}

TEST(ImageDecode, PngDecodesToPillowsRgb) {
  for (bool interlaced : {false, true})
    for (const PngCase &c : pngCases(37, 23)) {
      SCOPED_TRACE(c.name + (interlaced ? " interlaced" : ""));
      Bytes file = makePng(37, 23, c.depth, c.colorType, c.raw, c.palette, interlaced);
      ASSERT_FALSE(file.empty());
      Image img;
      DecodedRegion at = decodeOk(file, {}, img);
      EXPECT_EQ(at.scale, 1.0);
      EXPECT_EQ(at.scaledWidth, 37);
      EXPECT_EQ(at.scaledHeight, 23);
      EXPECT_EQ(img.width, 37);
      EXPECT_EQ(img.height, 23);
      EXPECT_EQ(img.rgb, c.rgb);
    }
}

TEST(ImageDecode, PngRegionIsTheCroppedImage) {
  for (bool interlaced : {false, true})
    for (const PngCase &c : pngCases(37, 23)) {
      SCOPED_TRACE(c.name + (interlaced ? " interlaced" : ""));
      Bytes file = makePng(37, 23, c.depth, c.colorType, c.raw, c.palette, interlaced);
      Image whole{37, 23, c.rgb}, got;
      std::mt19937 rng(5);
      for (int i = 0; i < 10; ++i) {
        PixelBox r;
        r.width = 1 + int64_t(rng() % 37), r.height = 1 + int64_t(rng() % 23);
        r.x = int64_t(rng() % uint32_t(38 - r.width));
        r.y = int64_t(rng() % uint32_t(24 - r.height));
        DecodeOptions opts;
        opts.region = r;
        opts.minWidth = 4; // ignored by PNG
        DecodedRegion at = decodeOk(file, opts, got);
        EXPECT_EQ(at.scale, 1.0);
        EXPECT_EQ(at.x, r.x);
        EXPECT_EQ(at.y, r.y);
        EXPECT_EQ(got.width, r.width);
        EXPECT_EQ(got.height, r.height);
        EXPECT_TRUE(sameRegion(whole, got, at, r.x, r.y, r.x + r.width, r.y + r.height));
      }
    }
}

TEST(ImageDecode, DamagedPngFails) {
  Bytes file = makePng(97, 61, 8, PNG_COLOR_TYPE_RGB, texture(97, 61, 3, 4));
  Bytes cut(file.begin(), file.begin() + long(file.size() / 2));
  std::string message = decodeError(cut);
  EXPECT_NE(message.find("is a corrupt PNG"), std::string::npos) << message;
  // Cut inside the header.
  cut.resize(20);
  EXPECT_NE(headerError(cut).find("is a corrupt PNG"), std::string::npos);
  // A changed byte in the image data breaks its chunk's checksum.
  Bytes flipped = file;
  flipped[flipped.size() / 2] ^= 0x55;
  message = decodeError(flipped);
  EXPECT_NE(message.find("is a corrupt PNG"), std::string::npos) << message;
}

TEST(ImageDecode, RandomDamageFailsCleanly) {
  // Changed bytes anywhere in a file, decoded whole and in part: either pixels or an error.
  JpegSpec progressive;
  progressive.progressive = true;
  const Bytes files[] = {makeJpeg(JpegSpec{}), makeJpeg(progressive),
                         makePng(37, 23, 8, PNG_COLOR_TYPE_RGB_ALPHA, texture(37, 23, 4, 6))};
  std::mt19937 rng(17);
  Image img;
  for (const Bytes &file : files)
    for (int i = 0; i < 300; ++i) {
      Bytes damaged = file;
      for (int k = 0, n = 1 + int(rng() % 4); k < n; ++k)
        damaged[rng() % damaged.size()] = uint8_t(rng());
      DecodeOptions opts;
      if (i % 2) opts.region = {5, 7, 20, 11};
      Expected<DecodedRegion> got = decodeImage(damaged.data(), damaged.size(), opts, img);
      if (got) {
        EXPECT_EQ(img.rgb.size(), size_t(img.width * img.height * 3));
        continue;
      }
      const std::string &m = got.error().message();
      bool known = m.rfind("is a corrupt JPEG: ", 0) == 0 ||
                   m.rfind("is a corrupt PNG: ", 0) == 0 || m.rfind("has ", 0) == 0 ||
                   m == "is not a JPEG or PNG image" ||
                   m.find("which does not hold the region") != std::string::npos;
      EXPECT_TRUE(known) << m;
    }
}

TEST(ImageDecode, OutputBufferIsReused) {
  Bytes big = makePng(97, 61, 8, PNG_COLOR_TYPE_RGB, texture(97, 61, 3, 4));
  Bytes small = makeJpeg(JpegSpec{});
  Image img;
  decodeOk(big, {}, img);
  size_t capacity = img.rgb.capacity();
  const uint8_t *buffer = img.rgb.data();
  DecodeOptions opts;
  opts.region = {3, 4, 20, 10};
  decodeOk(small, opts, img);
  EXPECT_EQ(img.rgb.size(), size_t(img.width * img.height * 3));
  EXPECT_EQ(img.rgb.capacity(), capacity);
  EXPECT_EQ(img.rgb.data(), buffer);
}

} // namespace
} // namespace dtnn
