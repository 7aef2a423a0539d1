// Reference kernels of the ops declared in ir/ops/Encoding.cpp. normalize computes each value
// as the data loader's tables do, (T(v) / 255 - mean) / std in T, so that a model normalizing
// its u8 input sees the floats the loader would have given it, bit for bit. embedding copies rows, a
// token per parallel iteration; embedding_backward gives each thread a range of the table's
// rows and adds the dy rows of the tokens that fall in it in token order, so the sums do not
// depend on the thread count.
#include "backends/reference/KernelUtil.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

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

template <typename T> void normalize(const KernelArgs &a) {
  const std::vector<double> &mean = a.op->attrs().getFloats("mean");
  const std::vector<double> &std = a.op->attrs().getFloats("std");
  const uint8_t *x = a.in[0].as<uint8_t>();
  T *y = a.out[0].as<T>();
  const int64_t n = a.in[0].dim(0), channels = a.in[0].dim(1);
  const int64_t plane = n && channels ? a.in[0].numel() / (n * channels) : 0;
  // The value of each byte in each channel (one table when all channels share mean and std).
  std::vector<T> tables(mean.size() * 256);
  for (size_t c = 0; c < mean.size(); ++c)
    for (int v = 0; v < 256; ++v)
      tables[c * 256 + size_t(v)] = (T(v) / T(255) - T(mean[c])) / T(std[c]);
  parallelFor(n * channels, [&](int64_t row) {
    const T *table = tables.data() + (mean.size() > 1 ? size_t(row % channels) * 256 : 0);
    const uint8_t *from = x + row * plane;
    T *to = y + row * plane;
    for (int64_t k = 0; k < plane; ++k) to[k] = table[from[k]];
  });
}

template <typename T> void embedding(const KernelArgs &a) {
  const int32_t *idx = a.in[0].as<int32_t>();
  const T *w = a.in[1].as<T>();
  T *y = a.out[0].as<T>();
  int64_t v = a.in[1].dim(0), d = a.in[1].dim(1), tokens = a.in[0].numel();
  parallelFor(tokens, [&](int64_t t) {
    T *row = y + t * d;
    if (idx[t] < 0 || idx[t] >= v) {
      std::fill(row, row + d, std::numeric_limits<T>::quiet_NaN());
      return;
    }
    std::memcpy(row, w + int64_t(idx[t]) * d, size_t(d) * sizeof(T));
  });
}

template <typename T> void embeddingBackward(const KernelArgs &a) {
  const T *dy = a.in[0].as<T>();
  const int32_t *idx = a.in[1].as<int32_t>();
  T *dw = a.out[0].as<T>();
  int64_t v = a.out[0].dim(0), d = a.out[0].dim(1), tokens = a.in[1].numel();
  int64_t pad = a.op->attrs().getInt("padding_idx");
  constexpr int64_t kRows = 64;
  parallelFor((v + kRows - 1) / kRows, [&](int64_t block) {
    int64_t lo = block * kRows, hi = std::min(v, lo + kRows);
    std::fill(dw + lo * d, dw + hi * d, T(0));
    for (int64_t t = 0; t < tokens; ++t) {
      int64_t r = idx[t];
      if (r < lo || r >= hi || r == pad) continue;
      T *row = dw + r * d;
      const T *g = dy + t * d;
      for (int64_t j = 0; j < d; ++j) row[j] += g[j];
    }
  });
}

} // namespace

void registerEncodingKernels(KernelTable &t) {
  // Dispatch on the table's type: the indices are integers.
  t.add("embedding", [](const KernelArgs &a) {
    dispatchFloat(a.in[1].type.dtype, [&](auto tag) { embedding<decltype(tag)>(a); });
  });
  t.add("embedding_backward", [](const KernelArgs &a) {
    dispatchFloat(a.in[0].type.dtype, [&](auto tag) { embeddingBackward<decltype(tag)>(a); });
  });
  // Dispatch on the result's type: the operands are integer.
  t.add("normalize", [](const KernelArgs &a) {
    dispatchFloat(a.out[0].type.dtype, [&](auto tag) { normalize<decltype(tag)>(a); });
  });
  t.add("one_hot", [](const KernelArgs &a) {
    dispatchFloat(a.out[0].type.dtype, [&](auto tag) { oneHot<decltype(tag)>(a); });
  });
}


} // namespace dtnn::reference
