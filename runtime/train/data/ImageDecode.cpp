// Image decoding into 8-bit RGB.
//
// JPEG goes through libjpeg's API in stages: open (jpeg_read_header), plan (pixel limit, region
// check, DCT scale), start (jpeg_start_decompress, jpeg_crop_scanline), rows (jpeg_skip_scanlines
// to the first row wanted, jpeg_read_scanlines for the rows wanted, jpeg_abort_decompress: the
// rest of the file is never read). libjpeg reports errors by calling back, so each stage that
// calls it is a function that arms setjmp first and holds no C++ object with a destructor; the
// callbacks copy libjpeg's message and longjmp back, for errors and for warnings alike (a warning
// means a truncated or corrupt file that libjpeg would fill in with grey), except for the few
// warnings about metadata that leave the pixels whole. Between the stages plain C++ code
// allocates and checks.
//
// A region narrower than the image is decoded with jpeg_crop_scanline, which moves its left edge
// down to an iMCU boundary. Fancy upsampling treats a cropped row's first and last pixel as if
// they were the image's edge, so their chroma may differ from a whole decode; the crop is
// therefore widened by one pixel on each side where the image goes on, and the pixels of the
// requested region equal those of a whole decode at the same scale. Rows need no margin:
// libjpeg skips whole iMCU rows and decodes the context rows that the first row read needs.
// The pixels outside the requested region (the margin and the iMCU alignment) are returned as
// decoded and may differ from a whole decode at the buffer's left and right edges.
//
// The colours are those of Pillow's convert("RGB"): libjpeg converts YCbCr and greyscale to RGB
// itself, with its default islow IDCT and fancy upsampling as Pillow leaves them; a CMYK or YCCK
// file is decoded as CMYK, taken to be inverted as Adobe writes it (Pillow assumes so for every
// CMYK JPEG), and converted with Pillow's arithmetic.
//
// PNG goes through libpng's classic API with the same setjmp discipline. libpng expands palettes
// and 1, 2 and 4-bit grey; this file drops alpha and narrows 16-bit samples as Pillow does: the
// high byte, except for 16-bit grey, which Pillow opens as 32-bit integers and converts to RGB
// by clipping to 255. A non-interlaced file is read row by row up to the region's last row; an
// interlaced one is read whole. Either way only the region is kept.
#include "runtime/train/data/ImageDecode.h"

#include <cstdio>
// jpeglib.h needs FILE and size_t declared before it.
#include <jerror.h>
#include <jpeglib.h>
#include <png.h>

#include <algorithm>
#include <csetjmp>
#include <cstring>
#include <string>

namespace dtnn {
namespace {

constexpr uint8_t kPngMagic[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
// More scans than any encoder writes: a file with more is refused, as each scan may cost a pass
// over the whole image.
constexpr int kMaxJpegScans = 1000;
// Scaled pixels decoded beyond each side of a cropped region (see the top of the file).
constexpr int64_t kCropMargin = 1;
// Rows read per jpeg_read_scanlines call.
constexpr int kRowBatch = 16;

enum class Status { Ok, Failed };

// Whether the bytes start like a JPEG file (an SOI marker, then a marker's 0xFF).
bool isJpeg(const uint8_t *data, size_t size) {
  return size >= 3 && data[0] == 0xFF && data[1] == 0xD8 && data[2] == 0xFF;
}

// Whether the bytes start with the PNG signature.
bool isPng(const uint8_t *data, size_t size) {
  return size >= sizeof(kPngMagic) && std::memcmp(data, kPngMagic, sizeof(kPngMagic)) == 0;
}

// The error for a file whose width * height exceeds the limit.
Error tooManyPixels(int64_t width, int64_t height, int64_t maxPixels) {
  return Error::make("has " + std::to_string(width) + " x " + std::to_string(height) +
                     " pixels, more than the limit of " + std::to_string(maxPixels));
}

// Whether width * height exceeds maxPixels (libjpeg and libpng keep both sides below 2^31).
bool exceedsLimit(int64_t width, int64_t height, int64_t maxPixels) {
  return width * height > maxPixels;
}

// Checks that `region` lies inside a width x height image and returns it with width 0 expanded
// to the whole image.
Expected<PixelBox> checkRegion(const PixelBox &region, int64_t width, int64_t height) {
  if (region.width == 0) return PixelBox{0, 0, width, height};
  const PixelBox &r = region;
  if (r.x < 0 || r.y < 0 || r.width < 0 || r.height <= 0 || r.x > width - r.width ||
      r.y > height - r.height)
    return Error::make("is " + std::to_string(width) + " x " + std::to_string(height) +
                       " pixels, which does not hold the region of " + std::to_string(r.width) +
                       " x " + std::to_string(r.height) + " at (" + std::to_string(r.x) + ", " +
                       std::to_string(r.y) + ")");
  return r;
}

// ---------------------------------------------------------------------------------------------
// JPEG

// libjpeg's state and the error manager that brings control back to the armed stage. Plain
// data: a longjmp over it skips no destructor.
struct JpegReader {
  jpeg_decompress_struct cinfo;
  jpeg_error_mgr err;
  jpeg_progress_mgr progress;
  jmp_buf jump;
  bool created = false;
  char message[JMSG_LENGTH_MAX + 64] = {};
};

// libjpeg's error exit: keeps the message and returns to the armed stage.
void jpegErrorExit(j_common_ptr cinfo) {
  JpegReader *r = static_cast<JpegReader *>(cinfo->client_data);
  (*cinfo->err->format_message)(cinfo, r->message);
  std::longjmp(r->jump, 1);
}

// Whether a libjpeg warning is about metadata only, the pixels being whole.
bool isHarmlessWarning(int code) {
  return code == JWRN_JFIF_MAJOR || code == JWRN_ADOBE_XFORM || code == JWRN_NOT_SEQUENTIAL;
}

// libjpeg's message hook: a warning (level -1) about the data fails the decode like an error;
// trace messages are dropped.
void jpegEmitMessage(j_common_ptr cinfo, int level) {
  if (level == -1 && !isHarmlessWarning(cinfo->err->msg_code)) jpegErrorExit(cinfo);
}

// Refuses files with more scans than kMaxJpegScans; libjpeg calls it as it consumes input.
void jpegProgress(j_common_ptr common) {
  JpegReader *r = static_cast<JpegReader *>(common->client_data);
  if (r->cinfo.input_scan_number > kMaxJpegScans) {
    std::snprintf(r->message, sizeof(r->message), "more than %d scans", kMaxJpegScans);
    std::longjmp(r->jump, 1);
  }
}

// Stage 1: creates the decompressor and reads the header, up to the first scan.
Status jpegOpen(JpegReader &r, const uint8_t *data, size_t size) {
  if (setjmp(r.jump)) return Status::Failed;
  r.cinfo.err = jpeg_std_error(&r.err);
  r.err.error_exit = jpegErrorExit;
  r.err.emit_message = jpegEmitMessage;
  r.cinfo.client_data = &r;
  jpeg_create_decompress(&r.cinfo);
  r.created = true;
  r.progress.progress_monitor = jpegProgress;
  r.cinfo.progress = &r.progress;
  jpeg_mem_src(&r.cinfo, data, static_cast<unsigned long>(size));
  jpeg_read_header(&r.cinfo, TRUE);
  return Status::Ok;
}

// Stage 2: sets the scale and colour space and computes the output size.
Status jpegSetScale(JpegReader &r, unsigned denom) {
  if (setjmp(r.jump)) return Status::Failed;
  r.cinfo.scale_num = 1;
  r.cinfo.scale_denom = denom;
  bool cmyk = r.cinfo.jpeg_color_space == JCS_CMYK || r.cinfo.jpeg_color_space == JCS_YCCK;
  r.cinfo.out_color_space = cmyk ? JCS_CMYK : JCS_RGB;
  jpeg_calc_output_dimensions(&r.cinfo);
  return Status::Ok;
}

// The columns and rows to decode, in scaled pixels.
struct JpegWindow {
  JDIMENSION x = 0, width = 0; // jpeg_crop_scanline moves x left to an iMCU boundary
  JDIMENSION firstRow = 0, endRow = 0;
};

// Stage 3: starts decompression and, for a window narrower than the image, crops the rows to
// its columns, widening the window to where the crop starts.
Status jpegStart(JpegReader &r, JpegWindow &w) {
  if (setjmp(r.jump)) return Status::Failed;
  jpeg_start_decompress(&r.cinfo);
  if (w.width < r.cinfo.output_width) jpeg_crop_scanline(&r.cinfo, &w.x, &w.width);
  return Status::Ok;
}

// Stage 3b: a scratch row of `bytes` from libjpeg's image pool (freed with the decompressor).
Status jpegAllocRow(JpegReader &r, JDIMENSION bytes, JSAMPROW &row) {
  if (setjmp(r.jump)) return Status::Failed;
  row = (*r.cinfo.mem->alloc_sarray)(reinterpret_cast<j_common_ptr>(&r.cinfo), JPOOL_IMAGE,
                                      bytes, 1)[0];
  return Status::Ok;
}

// Converts a row of CMYK samples as an Adobe file stores them (inverted: 0 is full ink) to RGB
// as Pillow does: it inverts them (C = 255 - c, K = 255 - k) and takes
// R = (255 - K) - C * (255 - K) / 255, the product divided with its rounding.
void cmykRowToRgb(const uint8_t *in, uint8_t *out, JDIMENSION width) {
  for (JDIMENSION i = 0; i < width; ++i, in += 4, out += 3) {
    int nk = in[3];
    for (int c = 0; c < 3; ++c) {
      int t = (255 - in[c]) * nk + 128;
      out[c] = uint8_t(nk - (((t >> 8) + t) >> 8));
    }
  }
}

// Stage 4: skips to w.firstRow and reads rows up to w.endRow into `out` (w.width RGB pixels a
// row), then abandons the rest of the file. `scratch` holds one row of the output colour space,
// for CMYK files.
Status jpegReadRows(JpegReader &r, const JpegWindow &w, uint8_t *out, JSAMPROW scratch) {
  if (setjmp(r.jump)) return Status::Failed;
  j_decompress_ptr cinfo = &r.cinfo;
  if (w.firstRow > 0 && jpeg_skip_scanlines(cinfo, w.firstRow) != w.firstRow) {
    std::snprintf(r.message, sizeof(r.message), "cannot skip to row %u", w.firstRow);
    return Status::Failed;
  }
  const size_t stride = size_t(w.width) * 3;
  const bool cmyk = cinfo->out_color_space == JCS_CMYK;
  while (cinfo->output_scanline < w.endRow) {
    JDIMENSION row = cinfo->output_scanline - w.firstRow;
    uint8_t *dst = out + row * stride;
    JDIMENSION got;
    if (cmyk) {
      got = jpeg_read_scanlines(cinfo, &scratch, 1);
      if (got == 1) cmykRowToRgb(scratch, dst, w.width);
    } else {
      JSAMPROW rows[kRowBatch];
      JDIMENSION n = std::min<JDIMENSION>(kRowBatch, w.endRow - cinfo->output_scanline);
      for (JDIMENSION i = 0; i < n; ++i) rows[i] = dst + i * stride;
      got = jpeg_read_scanlines(cinfo, rows, n);
    }
    if (got == 0) {
      std::snprintf(r.message, sizeof(r.message), "no more rows after row %u",
                    cinfo->output_scanline);
      return Status::Failed;
    }
  }
  jpeg_abort_decompress(cinfo);
  return Status::Ok;
}

// A JpegReader that destroys its decompressor when it goes out of scope.
struct JpegSession {
  JpegReader r;
  JpegSession() = default;
  JpegSession(const JpegSession &) = delete;
  JpegSession &operator=(const JpegSession &) = delete;
  ~JpegSession() {
    if (r.created) jpeg_destroy_decompress(&r.cinfo);
  }
  // The error for a failed stage.
  Error error() const { return Error::make(std::string("is a corrupt JPEG: ") + r.message); }
};

// Opens a JPEG file and checks its size against the limit.
Error openJpeg(JpegSession &s, const uint8_t *data, size_t size, int64_t maxPixels) {
  if (jpegOpen(s.r, data, size) != Status::Ok) return s.error();
  int64_t w = s.r.cinfo.image_width, h = s.r.cinfo.image_height;
  if (exceedsLimit(w, h, maxPixels)) return tooManyPixels(w, h, maxPixels);
  return Error::success();
}

// The DCT scale denominator: the smallest scale at which the region keeps at least
// minWidth x minHeight pixels.
unsigned chooseDenominator(const PixelBox &region, int64_t minWidth, int64_t minHeight) {
  if (minWidth <= 0 && minHeight <= 0) return 1;
  for (unsigned d : {8u, 4u, 2u})
    if (region.width / d >= minWidth && region.height / d >= minHeight) return d;
  return 1;
}

// Decodes the region of a JPEG file at the chosen scale.
Expected<DecodedRegion> decodeJpeg(const uint8_t *data, size_t size, const DecodeOptions &opts,
                                   Image &out) {
  JpegSession s;
  if (Error e = openJpeg(s, data, size, opts.maxPixels)) return e;
  jpeg_decompress_struct &cinfo = s.r.cinfo;
  Expected<PixelBox> box = checkRegion(opts.region, cinfo.image_width, cinfo.image_height);
  if (!box) return box.takeError();

  unsigned denom = chooseDenominator(*box, opts.minWidth, opts.minHeight);
  if (jpegSetScale(s.r, denom) != Status::Ok) return s.error();
  DecodedRegion where;
  where.scale = 1.0 / denom;
  where.scaledWidth = cinfo.output_width;
  where.scaledHeight = cinfo.output_height;

  // The region in scaled pixels: the start rounded down, the end up.
  int64_t x0 = box->x / denom, y0 = box->y / denom;
  int64_t x1 = std::min<int64_t>((box->x + box->width + denom - 1) / denom, where.scaledWidth);
  int64_t y1 = std::min<int64_t>((box->y + box->height + denom - 1) / denom, where.scaledHeight);
  JpegWindow w;
  if (x0 == 0 && x1 == where.scaledWidth) {
    w.width = JDIMENSION(where.scaledWidth);
  } else {
    // At least max_h_samp_factor + 1 pixels wide, so that each component keeps two samples a
    // row: with fewer, libjpeg swaps the fancy upsampler for a plain one.
    int64_t minWidth = cinfo.max_h_samp_factor + 1;
    int64_t cx0 = std::max<int64_t>(x0 - kCropMargin, 0);
    int64_t cx1 = std::min<int64_t>(std::max(x1 + kCropMargin, cx0 + minWidth), where.scaledWidth);
    cx0 = std::max<int64_t>(std::min(cx0, cx1 - minWidth), 0);
    w.x = JDIMENSION(cx0);
    w.width = JDIMENSION(cx1 - cx0);
  }
  w.firstRow = JDIMENSION(y0);
  w.endRow = JDIMENSION(y1);
  if (jpegStart(s.r, w) != Status::Ok) return s.error();

  JSAMPROW scratch = nullptr;
  if (cinfo.out_color_space == JCS_CMYK &&
      jpegAllocRow(s.r, w.width * cinfo.output_components, scratch) != Status::Ok)
    return s.error();
  out.width = w.width;
  out.height = y1 - y0;
  out.rgb.resize(size_t(out.width * out.height * 3));
  if (jpegReadRows(s.r, w, out.rgb.data(), scratch) != Status::Ok) return s.error();
  where.x = w.x;
  where.y = y0;
  return where;
}

// ---------------------------------------------------------------------------------------------
// PNG

// libpng's state, the bytes it reads from, and the last error message. Plain data.
struct PngReader {
  png_structp png = nullptr;
  png_infop info = nullptr;
  const uint8_t *data = nullptr;
  size_t size = 0, pos = 0;
  char message[256] = {};
};

// libpng's error hook: keeps the message and returns to the armed stage.
void pngError(png_structp png, png_const_charp message) {
  PngReader *r = static_cast<PngReader *>(png_get_error_ptr(png));
  std::snprintf(r->message, sizeof(r->message), "%s", message);
  png_longjmp(png, 1);
}

// libpng's warning hook: warnings (an unknown profile, a bad ancillary chunk) leave the pixels
// whole and are ignored.
void pngWarning(png_structp, png_const_charp) {}

// libpng's read hook: the next n bytes of the file; running out of them is an error.
void pngRead(png_structp png, png_bytep dst, size_t n) {
  PngReader *r = static_cast<PngReader *>(png_get_io_ptr(png));
  if (n > r->size - r->pos) png_error(png, "truncated file");
  std::memcpy(dst, r->data + r->pos, n);
  r->pos += n;
}

// Stage 1: reads the chunks before the image data.
Status pngOpen(PngReader &r) {
  if (setjmp(png_jmpbuf(r.png))) return Status::Failed;
  png_set_read_fn(r.png, &r, pngRead);
  png_set_benign_errors(r.png, 1);
  png_read_info(r.png, r.info);
  return Status::Ok;
}

// Stage 2: asks libpng for 8 or 16-bit grey, grey-alpha, RGB or RGBA samples and reports the
// channel count, bit depth, row size and pass count of the rows it will deliver.
Status pngSetTransforms(PngReader &r, int &channels, int &depth, size_t &rowBytes, int &passes) {
  if (setjmp(png_jmpbuf(r.png))) return Status::Failed;
  int colorType = png_get_color_type(r.png, r.info);
  if (colorType == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(r.png);
  if (colorType == PNG_COLOR_TYPE_GRAY && png_get_bit_depth(r.png, r.info) < 8)
    png_set_expand_gray_1_2_4_to_8(r.png);
  passes = png_set_interlace_handling(r.png);
  png_read_update_info(r.png, r.info);
  channels = png_get_channels(r.png, r.info);
  depth = png_get_bit_depth(r.png, r.info);
  rowBytes = png_get_rowbytes(r.png, r.info);
  return Status::Ok;
}

// The layout of the rows libpng delivers.
struct PngRows {
  int channels = 0, depth = 0;
};

// Converts `width` pixels of a delivered row, starting at pixel x, to RGB.
void pngRowToRgb(const PngRows &f, const uint8_t *row, int64_t x, int64_t width, uint8_t *out) {
  const int n = f.channels, bytes = f.depth / 8;
  const uint8_t *in = row + x * n * bytes;
  if (bytes == 1 && n == 3) {
    std::memcpy(out, in, size_t(width) * 3);
    return;
  }
  for (int64_t i = 0; i < width; ++i, in += n * bytes, out += 3) {
    if (n >= 3) {
      for (int c = 0; c < 3; ++c) out[c] = in[c * bytes];
    } else if (bytes == 2 && n == 1) {
      // Pillow's 16-bit grey is an integer image; its conversion clips at 255.
      int v = in[0] << 8 | in[1];
      out[0] = out[1] = out[2] = uint8_t(std::min(v, 255));
    } else {
      out[0] = out[1] = out[2] = in[0];
    }
  }
}

// Stage 3 for non-interlaced files: reads rows up to the region's last and converts the
// region's part of each into `out`. `row` holds one delivered row.
Status pngReadRows(PngReader &r, const PngRows &f, const PixelBox &box, uint8_t *row,
                   uint8_t *out) {
  if (setjmp(png_jmpbuf(r.png))) return Status::Failed;
  for (int64_t y = 0; y < box.y + box.height; ++y) {
    png_read_row(r.png, row, nullptr);
    if (y >= box.y) pngRowToRgb(f, row, box.x, box.width, out + (y - box.y) * box.width * 3);
  }
  return Status::Ok;
}

// Stage 3 for interlaced files: reads the whole image into the given rows.
Status pngReadImage(PngReader &r, png_bytepp rows) {
  if (setjmp(png_jmpbuf(r.png))) return Status::Failed;
  png_read_image(r.png, rows);
  return Status::Ok;
}

// A PngReader that frees libpng's state when it goes out of scope.
struct PngSession {
  PngReader r;
  PngSession(const uint8_t *data, size_t size) {
    r.data = data;
    r.size = size;
    r.png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &r, pngError, pngWarning);
    if (r.png) r.info = png_create_info_struct(r.png);
  }
  PngSession(const PngSession &) = delete;
  PngSession &operator=(const PngSession &) = delete;
  ~PngSession() {
    if (r.png) png_destroy_read_struct(&r.png, r.info ? &r.info : nullptr, nullptr);
  }
  // The error for a failed stage.
  Error error() const { return Error::make(std::string("is a corrupt PNG: ") + r.message); }
};

// Opens a PNG file and checks its size against the limit.
Error openPng(PngSession &s, int64_t maxPixels) {
  if (!s.r.png || !s.r.info) return Error::make("is a PNG that libpng could not start reading");
  if (pngOpen(s.r) != Status::Ok) return s.error();
  int64_t w = png_get_image_width(s.r.png, s.r.info);
  int64_t h = png_get_image_height(s.r.png, s.r.info);
  if (exceedsLimit(w, h, maxPixels)) return tooManyPixels(w, h, maxPixels);
  return Error::success();
}

// Decodes the region of a PNG file (at full scale: PNG has no cheaper smaller decode).
Expected<DecodedRegion> decodePng(const uint8_t *data, size_t size, const DecodeOptions &opts,
                                  Image &out) {
  PngSession s(data, size);
  if (Error e = openPng(s, opts.maxPixels)) return e;
  const int64_t W = png_get_image_width(s.r.png, s.r.info);
  const int64_t H = png_get_image_height(s.r.png, s.r.info);
  Expected<PixelBox> box = checkRegion(opts.region, W, H);
  if (!box) return box.takeError();
  PngRows f;
  size_t rowBytes = 0;
  int passes = 1;
  if (pngSetTransforms(s.r, f.channels, f.depth, rowBytes, passes) != Status::Ok)
    return s.error();

  out.width = box->width;
  out.height = box->height;
  out.rgb.resize(size_t(out.width * out.height * 3));
  if (passes == 1) {
    std::vector<uint8_t> row(rowBytes);
    if (pngReadRows(s.r, f, *box, row.data(), out.rgb.data()) != Status::Ok) return s.error();
  } else {
    std::vector<uint8_t> pixels(rowBytes * size_t(H));
    std::vector<png_bytep> rows(static_cast<size_t>(H));
    for (int64_t y = 0; y < H; ++y) rows[size_t(y)] = pixels.data() + size_t(y) * rowBytes;
    if (pngReadImage(s.r, rows.data()) != Status::Ok) return s.error();
    for (int64_t y = 0; y < box->height; ++y)
      pngRowToRgb(f, rows[size_t(box->y + y)], box->x, box->width,
                  out.rgb.data() + y * box->width * 3);
  }
  DecodedRegion where;
  where.scaledWidth = W;
  where.scaledHeight = H;
  where.x = box->x;
  where.y = box->y;
  return where;
}

Error notAnImage() { return Error::make("is not a JPEG or PNG image"); }

} // namespace

Expected<ImageHeader> readImageHeader(const uint8_t *data, size_t size, int64_t maxPixels) {
  if (isJpeg(data, size)) {
    JpegSession s;
    if (Error e = openJpeg(s, data, size, maxPixels)) return e;
    return ImageHeader{ImageFormat::Jpeg, s.r.cinfo.image_width, s.r.cinfo.image_height};
  }
  if (isPng(data, size)) {
    PngSession s(data, size);
    if (Error e = openPng(s, maxPixels)) return e;
    return ImageHeader{ImageFormat::Png, png_get_image_width(s.r.png, s.r.info),
                       png_get_image_height(s.r.png, s.r.info)};
  }
  return notAnImage();
}

Expected<DecodedRegion> decodeImage(const uint8_t *data, size_t size, const DecodeOptions &opts,
                                    Image &out) {
  if (isJpeg(data, size)) return decodeJpeg(data, size, opts, out);
  if (isPng(data, size)) return decodePng(data, size, opts, out);
  return notAnImage();
}

} // namespace dtnn
