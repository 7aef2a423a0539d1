#include "runtime/BFloat16.h"

namespace dtnn::runtime {

void widenBf16(const uint16_t *in, float *out, int64_t n) {
#pragma omp parallel for schedule(static) if (n > (int64_t{1} << 16))
  for (int64_t i = 0; i < n; ++i) out[i] = widenBf16(in[i]);
}

void narrowToBf16(const float *in, uint16_t *out, int64_t n) {
#pragma omp parallel for schedule(static) if (n > (int64_t{1} << 16))
  for (int64_t i = 0; i < n; ++i) out[i] = narrowToBf16(in[i]);
}

} // namespace dtnn::runtime
