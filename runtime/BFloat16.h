// bfloat16 storage: the upper 16 bits of a float32. Widening is exact (the
// bits shift up); narrowing rounds to nearest, ties to even, as oneDNN, the
// JIT's stores and the AVX512-BF16 instructions do, and keeps a NaN a quiet
// NaN. These are the reference backend's conversions, the oracle the other
// backends are tested against.
#pragma once

#include <cstdint>
#include <cstring>

namespace dtnn::runtime {

inline float widenBf16(uint16_t b) {
  uint32_t bits = uint32_t{b} << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

inline uint16_t narrowToBf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40u);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}

// The float32 value nearest to f that bf16 holds: narrowToBf16 then widenBf16.
inline float roundToBf16(float f) { return widenBf16(narrowToBf16(f)); }

// n elements, in parallel on the process's threads for large arrays.
void widenBf16(const uint16_t *in, float *out, int64_t n);
void narrowToBf16(const float *in, uint16_t *out, int64_t n);

} // namespace dtnn::runtime
