// Reference kernels of the ops declared in ir/ops/Encoding.cpp.
#include "backends/reference/KernelUtil.h"

namespace dtnn::reference {

namespace {

template <typename T> void oneHot(const KernelArgs &a) {
  const int32_t *label = a.in[0].as<int32_t>();
  T *out = a.out[0].as<T>();
  int64_t n = a.out[0].dim(0), classes = a.out[0].dim(1);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t c = 0; c < classes; ++c) out[i * classes + c] = T(0);
    if (label[i] >= 0 && label[i] < classes) out[i * classes + label[i]] = T(1);
  }
}

} // namespace

void registerEncodingKernels(KernelTable &t) {
  // Dispatch on the result's type: the operand is integer.
  t.add("one_hot", [](const KernelArgs &a) {
    dispatchFloat(a.out[0].type.dtype, [&](auto tag) { oneHot<decltype(tag)>(a); });
  });
}


} // namespace dtnn::reference
