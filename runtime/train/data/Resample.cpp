// Bilinear resampling with Pillow's filter (see Resample.h).
//
// Algorithm, per axis, as Pillow computes it: output pixel i of n, over the box [in0, in1), is
// centred at in0 + (i + 0.5) * scale with scale = (in1 - in0) / n; the triangle filter is widened
// to support = max(scale, 1) (so a shrink averages over the pixels it merges); its taps are the
// source pixels from int(centre - support + 0.5) to int(centre + support + 0.5), clamped to the
// image, weighted by the filter at their distance from the centre divided by the support, then
// normalised to sum to 1. Pillow computes the box edges in single precision, and so does this.
// The horizontal pass writes the rows the vertical pass reads as 8-bit pixels, rounded; a pass
// whose axis keeps its size and box is skipped, as in Pillow.
//
// Where Pillow keeps weights in 22-bit fixed point and sums in scalar code, these are rounded to
// 14 bits so that SSE2's multiply-add of 16-bit pairs (pmaddwd) sums two taps of four lanes in
// one instruction; a result differs from Pillow's by at most one level, and rarely at all. Every
// output reads the same even number of taps (the window moved inside the image, the extra taps
// weighing 0), so the loops have no data-dependent branches. The horizontal pass reads each row
// in a layout of tap pairs, a pixel and its right neighbour channel by channel (r r g g b b 0 0
// as 16-bit values), so that one 16-byte load and one pmaddwd sum a pair of taps.
#include "runtime/train/data/Resample.h"

#include <emmintrin.h>

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>

namespace dtnn {
namespace {

constexpr int kBits = 14;
constexpr int32_t kHalf = int32_t(1) << (kBits - 1);

double triangle(double x) {
  x = std::fabs(x);
  return x < 1.0 ? 1.0 - x : 0.0;
}

// A fixed-point sum as a pixel: rounded (the sum starts at one half) and clamped.
uint8_t clip8(int32_t sum) { return uint8_t(std::clamp(sum >> kBits, 0, 255)); }

// The filters of outputs first..first+count-1 of an axis of `outSize` pixels over the box
// [in0, in1) of `inSize` source pixels, each reading `taps` (even) source pixels from its start:
// the starts in `starts`, the weights in `weights` (taps per output, 14-bit fixed point).
// Returns taps.
int64_t axisFilters(int64_t inSize, double in0d, double in1d, int64_t outSize, int64_t first,
                    int64_t count, std::vector<int32_t> &starts, std::vector<int16_t> &weights) {
  float in0 = float(in0d), in1 = float(in1d);
  double scale = double(in1 - in0) / double(outSize);
  double filterScale = std::max(scale, 1.0);
  double support = filterScale; // the triangle's support is 1
  // Pillow's windows hold at most 2 ceil(support) + 1 taps; an even count, within the image.
  int64_t taps = int64_t(std::ceil(support)) * 2 + 2;
  taps = std::min(taps, inSize + (inSize & 1));
  starts.resize(size_t(count));
  weights.assign(size_t(count * taps), 0);
  std::vector<double> k(static_cast<size_t>(taps));
  for (int64_t i = 0; i < count; ++i) {
    double center = in0 + (double(first + i) + 0.5) * scale;
    // Truncation toward zero, as C's cast in Pillow.
    int64_t lo = std::max<int64_t>(int64_t(center - support + 0.5), 0);
    int64_t hi = std::min<int64_t>(int64_t(center + support + 0.5), inSize);
    // The window of `taps` pixels from `start` holds [lo, hi), inside the image where it can be.
    int64_t start = std::max<int64_t>(std::min(lo, inSize - taps), 0);
    double total = 0;
    std::fill(k.begin(), k.end(), 0.0);
    for (int64_t x = lo; x < hi; ++x) {
      k[size_t(x - start)] = triangle((double(x) - center + 0.5) / filterScale);
      total += k[size_t(x - start)];
    }
    int16_t *w = weights.data() + i * taps;
    for (int64_t t = 0; t < taps; ++t)
      w[t] = int16_t(std::lround((total != 0.0 ? k[size_t(t)] / total : 0.0) * (1 << kBits)));
    starts[size_t(i)] = int32_t(start);
  }
  return taps;
}

// Whether an axis changes: another size, or a box other than the whole axis.
bool axisChanges(int64_t inSize, double in0, double in1, int64_t outSize) {
  return outSize != inSize || float(in0) != 0.0f || float(in1) != float(outSize);
}

// Writes a row of `width` RGB pixels as tap pairs: entry x is r[x] r[x+1] g[x] g[x+1] b[x]
// b[x+1] 0 0 as 16-bit values (the pixel past the end reads 0). One byte shuffle an entry where
// 16 bytes can be loaded (pshufb with SSSE3), the last few pixels one by one.
using Bytes16 = uint8_t __attribute__((vector_size(16)));

__attribute__((target_clones("avx2", "ssse3", "default"))) void
pairRow(const uint8_t *rgb, int64_t width, int16_t *pairs) {
  const Bytes16 zero = {}, pick = {0, 16, 3, 16, 1, 16, 4, 16, 2, 16, 5, 16, 16, 16, 16, 16};
  int64_t x = 0;
  for (; x + 6 <= width; ++x) { // bytes 3x .. 3x + 15 lie in the row
    Bytes16 b;
    std::memcpy(&b, rgb + 3 * x, 16);
    Bytes16 e = __builtin_shuffle(b, zero, pick);
    std::memcpy(pairs + 8 * x, &e, 16);
  }
  for (; x < width; ++x) {
    const uint8_t *p = rgb + 3 * x;
    bool last = x + 1 == width;
    int16_t *e = pairs + 8 * x;
    e[0] = p[0];
    e[1] = last ? 0 : p[3];
    e[2] = p[1];
    e[3] = last ? 0 : p[4];
    e[4] = p[2];
    e[5] = last ? 0 : p[5];
    e[6] = e[7] = 0;
  }
}

// One output of the horizontal pass: NPAIRS (npairs when 0) pairs of taps from `p`, each pair's
// weights four times in `w`, as 32-bit sums of the four lanes r g b 0, shifted to pixel values.
template <int NPAIRS>
inline __m128i horizontalSum(const int16_t *p, const int32_t *w, int64_t npairs) {
  const int64_t n = NPAIRS > 0 ? NPAIRS : npairs;
  __m128i sum = _mm_set1_epi32(kHalf);
  for (int64_t m = 0; m < n; ++m) {
    __m128i px = _mm_loadu_si128(reinterpret_cast<const __m128i *>(p + 16 * m));
    __m128i wm = _mm_loadu_si128(reinterpret_cast<const __m128i *>(w + 4 * m));
    sum = _mm_add_epi32(sum, _mm_madd_epi16(px, wm));
  }
  return _mm_srai_epi32(sum, kBits);
}

// One row of the horizontal pass from its tap pairs: output i sums taps/2 pairs from its start.
// Two outputs at a time, packed to six bytes.
template <int NPAIRS>
void horizontalRow(const int16_t *pairs, const int32_t *starts, const int32_t *pairWeights,
                   int64_t npairs, int64_t width, uint8_t *o) {
  int64_t i = 0;
  for (; i + 2 <= width; i += 2) {
    __m128i a = horizontalSum<NPAIRS>(pairs + 8 * int64_t(starts[i]),
                                      pairWeights + 4 * i * npairs, npairs);
    __m128i b = horizontalSum<NPAIRS>(pairs + 8 * int64_t(starts[i + 1]),
                                      pairWeights + 4 * (i + 1) * npairs, npairs);
    __m128i bytes = _mm_packus_epi16(_mm_packs_epi32(a, b), _mm_setzero_si128());
    uint64_t v = uint64_t(_mm_cvtsi128_si64(bytes)); // r g b 0 r g b 0
    uint64_t six = (v & 0xFFFFFF) | ((v >> 8) & 0xFFFFFF000000);
    std::memcpy(o + 3 * i, &six, 6);
  }
  if (i < width) {
    __m128i a = horizontalSum<NPAIRS>(pairs + 8 * int64_t(starts[i]),
                                      pairWeights + 4 * i * npairs, npairs);
    uint32_t v = uint32_t(_mm_cvtsi128_si32(_mm_packus_epi16(_mm_packs_epi32(a, a), a)));
    o[3 * i] = uint8_t(v);
    o[3 * i + 1] = uint8_t(v >> 8);
    o[3 * i + 2] = uint8_t(v >> 16);
  }
}

// The horizontal pass of one row, with the pair count fixed for the common sizes.
void horizontalRowOf(const int16_t *pairs, const int32_t *starts, const int32_t *pairWeights,
                     int64_t taps, int64_t width, uint8_t *o) {
  switch (taps / 2) {
  case 2: return horizontalRow<2>(pairs, starts, pairWeights, 2, width, o);
  case 3: return horizontalRow<3>(pairs, starts, pairWeights, 3, width, o);
  case 4: return horizontalRow<4>(pairs, starts, pairWeights, 4, width, o);
  default: return horizontalRow<0>(pairs, starts, pairWeights, taps / 2, width, o);
  }
}

// One output row of the vertical pass: the rows from `first` (taps of them, in pairs) weighted
// and summed across the whole row.
void verticalRow(const uint8_t *rows, int64_t rowStride, int64_t first, int64_t taps,
                 const int16_t *w, int64_t rowBytes, uint8_t *o) {
  const __m128i half = _mm_set1_epi32(kHalf), zero = _mm_setzero_si128();
  int64_t c = 0;
  for (; c + 16 <= rowBytes; c += 16) {
    __m128i s0 = half, s1 = half, s2 = half, s3 = half;
    for (int64_t t = 0; t < taps; t += 2) {
      const uint8_t *a = rows + (first + t) * rowStride + c;
      __m128i ra = _mm_loadu_si128(reinterpret_cast<const __m128i *>(a));
      __m128i rb = _mm_loadu_si128(reinterpret_cast<const __m128i *>(a + rowStride));
      __m128i wt = _mm_set1_epi32(int32_t(uint16_t(w[t])) | (int32_t(w[t + 1]) << 16));
      __m128i lo = _mm_unpacklo_epi8(ra, rb), hi = _mm_unpackhi_epi8(ra, rb);
      s0 = _mm_add_epi32(s0, _mm_madd_epi16(_mm_unpacklo_epi8(lo, zero), wt));
      s1 = _mm_add_epi32(s1, _mm_madd_epi16(_mm_unpackhi_epi8(lo, zero), wt));
      s2 = _mm_add_epi32(s2, _mm_madd_epi16(_mm_unpacklo_epi8(hi, zero), wt));
      s3 = _mm_add_epi32(s3, _mm_madd_epi16(_mm_unpackhi_epi8(hi, zero), wt));
    }
    __m128i a = _mm_packs_epi32(_mm_srai_epi32(s0, kBits), _mm_srai_epi32(s1, kBits));
    __m128i b = _mm_packs_epi32(_mm_srai_epi32(s2, kBits), _mm_srai_epi32(s3, kBits));
    _mm_storeu_si128(reinterpret_cast<__m128i *>(o + c), _mm_packus_epi16(a, b));
  }
  for (; c < rowBytes; ++c) {
    int32_t sum = kHalf;
    for (int64_t t = 0; t < taps; ++t) sum += rows[(first + t) * rowStride + c] * w[t];
    o[c] = clip8(sum);
  }
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
  int64_t r0 = spec.cropY, r1 = spec.cropY + ch, tapsY = 0;
  if (vertical) {
    tapsY = axisFilters(src.height, spec.y0, spec.y1, spec.outHeight, spec.cropY, ch, s.startsY,
                        s.weightsY);
    r0 = src.height, r1 = 0;
    for (int32_t start : s.startsY) {
      r0 = std::min<int64_t>(r0, start);
      r1 = std::max<int64_t>(r1, std::min<int64_t>(start + tapsY, src.height));
    }
  }

  // The horizontal pass, into `rows` (or the source's own rows when the width stays).
  const uint8_t *rows = src.data + r0 * src.stride + spec.cropX * 3;
  int64_t rowStride = src.stride;
  if (horizontal) {
    int64_t tapsX = axisFilters(src.width, spec.x0, spec.x1, spec.outWidth, spec.cropX, cw,
                                s.startsX, s.weightsX);
    // The weights of each pair of taps as a 32-bit lane (low 16 bits the first), four times: the
    // operand of a multiply-add.
    s.pairWeights.resize(size_t(cw * tapsX / 2 * 4));
    for (size_t k = 0; k < s.pairWeights.size() / 4; ++k)
      std::fill_n(s.pairWeights.begin() + std::ptrdiff_t(4 * k), 4,
                  int32_t(uint16_t(s.weightsX[2 * k])) | (int32_t(s.weightsX[2 * k + 1]) << 16));
    // A window of an odd-width image may end one past it; that pixel reads 0 with weight 0.
    s.pairs.resize(size_t(src.width + 1) * 8);
    std::fill(s.pairs.end() - 8, s.pairs.end(), int16_t(0));
    // An image shorter than the vertical windows gets a zero row past its end (weight 0).
    int64_t extra = vertical && tapsY > src.height ? 1 : 0;
    if (vertical) {
      s.rows.resize(size_t((r1 - r0 + extra) * rowBytes));
      std::fill(s.rows.end() - extra * rowBytes, s.rows.end(), uint8_t(0));
    }
    uint8_t *dst = vertical ? s.rows.data() : out;
    for (int64_t r = r0; r < r1; ++r) {
      pairRow(src.data + r * src.stride, src.width, s.pairs.data());
      horizontalRowOf(s.pairs.data(), s.startsX.data(), s.pairWeights.data(), tapsX, cw,
                      dst + (r - r0) * rowBytes);
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
  if (!horizontal && tapsY > src.height) {
    // The vertical windows run one row past the image: read a copy with a zero row there.
    s.rows.assign(size_t((r1 - r0 + 1) * rowBytes), 0);
    for (int64_t r = r0; r < r1; ++r)
      std::copy(rows + (r - r0) * rowStride, rows + (r - r0) * rowStride + rowBytes,
                s.rows.begin() + (r - r0) * rowBytes);
    rows = s.rows.data();
    rowStride = rowBytes;
  }
  for (int64_t j = 0; j < ch; ++j)
    verticalRow(rows, rowStride, s.startsY[size_t(j)] - r0, tapsY,
                s.weightsY.data() + j * tapsY, rowBytes, out + j * rowBytes);
}

} // namespace dtnn
