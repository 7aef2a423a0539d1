// Decoding image files into 8-bit RGB: JPEG through libjpeg-turbo's libjpeg API, which can
// decode a region alone (jpeg_crop_scanline, jpeg_skip_scanlines) and scale in the DCT domain
// (1/2, 1/4, 1/8), and PNG through libpng. Greyscale, palette, 16-bit, alpha and CMYK images
// come out as RGB, as Pillow's convert("RGB") makes them. A damaged file is an error, never a
// partly grey image: libjpeg's warnings (a premature end of data, a corrupt segment) fail the
// decode. Messages name the problem, not the file: the caller adds the path.
#pragma once

#include "ir/Error.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace dtnn {

// An 8-bit RGB image, row after row, 3 bytes per pixel (HWC).
struct Image {
  int64_t width = 0, height = 0;
  std::vector<uint8_t> rgb;
};

// A rectangle of pixels; width 0 means the whole image.
struct PixelBox {
  int64_t x = 0, y = 0, width = 0, height = 0;
};

enum class ImageFormat { Jpeg, Png };

struct ImageHeader {
  ImageFormat format;
  int64_t width = 0, height = 0;
};

// PIL's decompression-bomb limit (Image.MAX_IMAGE_PIXELS * 2, where PIL refuses to open).
constexpr int64_t kDefaultMaxImagePixels = 178956970;

// Reads the format and size from a file's bytes. Errors: "is not a JPEG or PNG image", "is a
// corrupt JPEG: <why>", "is a corrupt PNG: <why>", and "has W x H pixels, more than the limit
// of N" when width * height exceeds maxPixels.
Expected<ImageHeader> readImageHeader(const uint8_t *data, size_t size,
                                      int64_t maxPixels = kDefaultMaxImagePixels);

struct DecodeOptions {
  // The part of the image wanted, in source pixels, inside the image; width 0: all of it.
  PixelBox region;
  // JPEG only: decode at the smallest scale of 1/8, 2/8, 4/8 and 8/8 at which the region is
  // still at least minWidth x minHeight pixels (0 x 0: at full scale). PNG ignores it.
  int64_t minWidth = 0, minHeight = 0;
  // Images with more pixels are refused before anything is decoded.
  int64_t maxPixels = kDefaultMaxImagePixels;
};

// Where the decoded pixels lie. The image at `scale` (scaledWidth x scaledHeight, the source
// size times scale rounded up, as libjpeg scales) is the coordinate system: the decoded image's
// pixel (0, 0) is its pixel (x, y). The decoded image covers the requested region (scaled) and
// may hold more around it (a JPEG decodes whole blocks).
struct DecodedRegion {
  double scale = 1;
  int64_t scaledWidth = 0, scaledHeight = 0;
  int64_t x = 0, y = 0;
};

// Decodes the file's bytes into `out` (its buffer is reused). At full scale the pixels equal
// Pillow's Image.open(...).convert("RGB") (libjpeg's default islow DCT and fancy upsampling;
// Pillow's CMYK conversion for Adobe CMYK JPEGs; PNG alpha dropped, 16-bit samples rounded to 8
// bits as Pillow does).
Expected<DecodedRegion> decodeImage(const uint8_t *data, size_t size, const DecodeOptions &opts,
                                    Image &out);

} // namespace dtnn
