// Pillow-exact bilinear resampling (see Resample.h).
//
// Algorithm, per axis: output pixel i of n, over the box [in0, in1), is centred at
// in0 + (i + 0.5) * scale with scale = (in1 - in0) / n; the triangle filter is widened to
// support = max(scale, 1) (so a shrink averages over the pixels it merges); its taps are the
// source pixels from int(centre - support + 0.5) to int(centre + support + 0.5), clamped to the
// image, weighted by the filter at their distance from the centre divided by the support, then
// normalised to sum to 1 and rounded to 22-bit fixed point. Pillow computes the box edges in
// single precision, and so does this. The horizontal pass writes the rows the vertical pass
// reads as 8-bit pixels, rounding as Pillow does; a pass whose axis keeps its size and box is
// skipped, as in Pillow.
#include "runtime/train/data/Resample.h"

#include <algorithm>
#include <cassert>
#include <cmath>

namespace dtnn {
namespace {

constexpr int kPrecisionBits = 22;
constexpr int32_t kHalf = int32_t(1) << (kPrecisionBits - 1);

double triangle(double x) {
  x = std::fabs(x);
  return x < 1.0 ? 1.0 - x : 0.0;
}

// A fixed-point sum as a pixel: rounded (the sum starts at one half) and clamped.
uint8_t clip8(int32_t sum) {
  if (sum >= (int32_t(1) << kPrecisionBits << 8)) return 255;
  if (sum <= 0) return 0;
  return uint8_t(sum >> kPrecisionBits);
}

// The filters of outputs first..first+count-1 of an axis of `outSize` pixels over the box
// [in0, in1) of `inSize` source pixels: per output its first tap and tap count in `bounds`, and
// its weights, `ksize` apart, in `coeffs`. Returns ksize.
int64_t axisFilters(int64_t inSize, double in0d, double in1d, int64_t outSize, int64_t first,
                    int64_t count, std::vector<int32_t> &bounds, std::vector<int32_t> &coeffs) {
  float in0 = float(in0d), in1 = float(in1d);
  double scale = double(in1 - in0) / double(outSize);
  double filterScale = std::max(scale, 1.0);
  double support = filterScale; // the triangle's support is 1
  int64_t ksize = int64_t(std::ceil(support)) * 2 + 1;
  bounds.resize(size_t(count * 2));
  coeffs.assign(size_t(count * ksize), 0);
  std::vector<double> k(static_cast<size_t>(ksize));
  for (int64_t i = 0; i < count; ++i) {
    double center = in0 + (double(first + i) + 0.5) * scale;
    // Truncation toward zero, as C's cast in Pillow.
    int64_t lo = std::max<int64_t>(int64_t(center - support + 0.5), 0);
    int64_t hi = std::min<int64_t>(int64_t(center + support + 0.5), inSize);
    int64_t taps = std::max<int64_t>(hi - lo, 0);
    double total = 0;
    for (int64_t x = 0; x < taps; ++x) {
      k[size_t(x)] = triangle((double(x + lo) - center + 0.5) / filterScale);
      total += k[size_t(x)];
    }
    int32_t *w = coeffs.data() + i * ksize;
    for (int64_t x = 0; x < taps; ++x) {
      double v = total != 0.0 ? k[size_t(x)] / total : k[size_t(x)];
      w[x] = int32_t(v < 0 ? -0.5 + v * (1 << kPrecisionBits) : 0.5 + v * (1 << kPrecisionBits));
    }
    bounds[size_t(2 * i)] = int32_t(lo);
    bounds[size_t(2 * i + 1)] = int32_t(taps);
  }
  return ksize;
}

// Whether an axis changes: another size, or a box other than the whole axis.
bool axisChanges(int64_t inSize, double in0, double in1, int64_t outSize) {
  return outSize != inSize || float(in0) != 0.0f || float(in1) != float(outSize);
}

} // namespace

void resampleBilinear(const RgbView &src, const ResampleSpec &spec, ResampleScratch &s,
                      uint8_t *out) {
  assert(spec.cropWidth > 0 && spec.cropHeight > 0 && spec.outWidth > 0 && spec.outHeight > 0);
  assert(spec.cropX >= 0 && spec.cropX + spec.cropWidth <= spec.outWidth);
  assert(spec.cropY >= 0 && spec.cropY + spec.cropHeight <= spec.outHeight);
  const int64_t cw = spec.cropWidth, ch = spec.cropHeight, rowBytes = cw * 3;
  bool horizontal = axisChanges(src.width, spec.x0, spec.x1, spec.outWidth);
  bool vertical = axisChanges(src.height, spec.y0, spec.y1, spec.outHeight);

  // The source rows the vertical pass reads: [r0, r1).
  int64_t r0 = spec.cropY, r1 = spec.cropY + ch, ksizeY = 0;
  if (vertical) {
    ksizeY = axisFilters(src.height, spec.y0, spec.y1, spec.outHeight, spec.cropY, ch, s.boundsY,
                         s.coeffsY);
    r0 = s.boundsY[0];
    r1 = s.boundsY[size_t(2 * ch - 2)] + s.boundsY[size_t(2 * ch - 1)];
  }

  // The horizontal pass, into `rows` (or the source's own rows when the width stays).
  const uint8_t *rows = src.data + r0 * src.stride + spec.cropX * 3;
  int64_t rowStride = src.stride;
  if (horizontal) {
    int64_t ksizeX = axisFilters(src.width, spec.x0, spec.x1, spec.outWidth, spec.cropX, cw,
                                 s.boundsX, s.coeffsX);
    uint8_t *dst = vertical ? (s.rows.resize(size_t((r1 - r0) * rowBytes)), s.rows.data()) : out;
    for (int64_t r = r0; r < r1; ++r) {
      const uint8_t *line = src.data + r * src.stride;
      uint8_t *o = dst + (r - r0) * rowBytes;
      for (int64_t i = 0; i < cw; ++i) {
        const uint8_t *p = line + int64_t(s.boundsX[size_t(2 * i)]) * 3;
        const int32_t *w = s.coeffsX.data() + i * ksizeX;
        int32_t s0 = kHalf, s1 = kHalf, s2 = kHalf;
        for (int32_t t = 0, n = s.boundsX[size_t(2 * i + 1)]; t < n; ++t, p += 3) {
          s0 += p[0] * w[t];
          s1 += p[1] * w[t];
          s2 += p[2] * w[t];
        }
        o[3 * i] = clip8(s0);
        o[3 * i + 1] = clip8(s1);
        o[3 * i + 2] = clip8(s2);
      }
    }
    if (!vertical) return;
    rows = dst;
    rowStride = rowBytes;
  }
  if (!vertical) {
    for (int64_t j = 0; j < ch; ++j)
      std::copy(rows + j * rowStride, rows + j * rowStride + rowBytes, out + j * rowBytes);
    return;
  }

  // The vertical pass: per output row, the weighted rows summed across the whole row at once.
  s.sums.resize(size_t(rowBytes));
  int32_t *sum = s.sums.data();
  for (int64_t j = 0; j < ch; ++j) {
    std::fill(sum, sum + rowBytes, kHalf);
    const int32_t *w = s.coeffsY.data() + j * ksizeY;
    int64_t first = s.boundsY[size_t(2 * j)] - r0;
    for (int32_t t = 0, n = s.boundsY[size_t(2 * j + 1)]; t < n; ++t) {
      const uint8_t *line = rows + (first + t) * rowStride;
      int32_t wt = w[t];
      for (int64_t c = 0; c < rowBytes; ++c) sum[c] += line[c] * wt;
    }
    uint8_t *o = out + j * rowBytes;
    for (int64_t c = 0; c < rowBytes; ++c) o[c] = clip8(sum[c]);
  }
}

} // namespace dtnn
