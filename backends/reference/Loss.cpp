// Reference kernels of the ops declared in ir/ops/Loss.cpp. Sums run in
// double in a fixed order: per-sample (or per-chunk) partial sums are
// computed in parallel into their own slots and added up serially, so the
// result does not depend on the thread count. A row whose label is the op's
// ignore_index is left out of the classifier losses and accuracy: their means
// are over the other rows (0 when there are none). Any other label outside
// [0, C) makes its sample's loss and gradient NaN, and counts as a miss for
// accuracy.
#include "backends/reference/KernelUtil.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace dtnn::reference {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// Elements per partial sum of the elementwise losses.
constexpr int64_t kChunk = 4096;

bool validLabel(int32_t label, int64_t classes) { return label >= 0 && label < classes; }

// The label of the rows an op leaves out.
int64_t ignored(const KernelArgs &a) { return a.op->attrs().getInt("ignore_index"); }

// The number of labels that are not `ignore`, as the divisor of a mean (1 when there are none,
// so that a mean over no row is 0).
double counted(const int32_t *label, int64_t n, int64_t ignore) {
  int64_t c = 0;
  for (int64_t i = 0; i < n; ++i) c += label[i] != ignore;
  return static_cast<double>(std::max<int64_t>(c, 1));
}

// Sums f(i) for i in [0, n) in double, deterministically.
template <typename F> double chunkedSum(int64_t n, F &&f) {
  int64_t chunks = (n + kChunk - 1) / kChunk;
  std::vector<double> partial(static_cast<size_t>(chunks));
  parallelFor(chunks, [&](int64_t c) {
    double s = 0;
    for (int64_t i = c * kChunk, e = std::min(n, (c + 1) * kChunk); i < e; ++i) s += f(i);
    partial[c] = s;
  });
  double total = 0;
  for (double s : partial) total += s;
  return total;
}

// Adds up per-sample values in order.
double orderedSum(const std::vector<double> &v) {
  double total = 0;
  for (double x : v) total += x;
  return total;
}

// The maximum of a row and log(sum(exp(row - max))), in double.
template <typename T> std::pair<double, double> logSumExp(const T *row, int64_t c) {
  double m = -std::numeric_limits<double>::infinity();
  for (int64_t j = 0; j < c; ++j) m = std::max(m, static_cast<double>(row[j]));
  double s = 0;
  for (int64_t j = 0; j < c; ++j) s += std::exp(static_cast<double>(row[j]) - m);
  return {m, std::log(s)};
}

// softmax_cross_entropy %logits [N,C], %label i32[N] -> mean of lse - logits[label] over the
// counted rows.
template <typename T> void softmaxCrossEntropy(const KernelArgs &a) {
  const T *x = a.in[0].as<T>();
  const int32_t *label = a.in[1].as<int32_t>();
  int64_t n = a.in[0].dim(0), c = a.in[0].dim(1), ignore = ignored(a);
  std::vector<double> loss(static_cast<size_t>(n));
  parallelFor(n, [&](int64_t i) {
    const T *row = x + i * c;
    if (label[i] == ignore || !validLabel(label[i], c)) {
      loss[i] = label[i] == ignore ? 0.0 : kNaN;
      return;
    }
    auto [m, lse] = logSumExp(row, c);
    // x - m is exact for the large logits where m + lse would round.
    loss[i] = lse - (static_cast<double>(row[label[i]]) - m);
  });
  *a.out[0].as<T>() = static_cast<T>(orderedSum(loss) / counted(label, n, ignore));
}

// softmax_cross_entropy_backward %dy, %logits, %label -> (softmax - onehot) * dy / counted,
// zero in the ignored rows.
template <typename T> void softmaxCrossEntropyBackward(const KernelArgs &a) {
  const T *x = a.in[1].as<T>();
  const int32_t *label = a.in[2].as<int32_t>();
  T *dx = a.out[0].as<T>();
  int64_t n = a.in[1].dim(0), c = a.in[1].dim(1), ignore = ignored(a);
  double scale = readScalar(a.in[0]) / counted(label, n, ignore);
  parallelFor(n, [&](int64_t i) {
    const T *row = x + i * c;
    T *out = dx + i * c;
    if (label[i] == ignore || !validLabel(label[i], c)) {
      std::fill(out, out + c, static_cast<T>(label[i] == ignore ? 0.0 : kNaN));
      return;
    }
    auto [m, lse] = logSumExp(row, c);
    for (int64_t j = 0; j < c; ++j) {
      double p = std::exp(static_cast<double>(row[j]) - m - lse);
      out[j] = static_cast<T>((p - (j == label[i] ? 1.0 : 0.0)) * scale);
    }
  });
}

// nll_loss %logp [N,C], %label i32[N] -> -mean(logp[n, label[n]]) over the counted rows.
template <typename T> void nllLoss(const KernelArgs &a) {
  const T *x = a.in[0].as<T>();
  const int32_t *label = a.in[1].as<int32_t>();
  int64_t n = a.in[0].dim(0), c = a.in[0].dim(1), ignore = ignored(a);
  double total = 0;
  for (int64_t i = 0; i < n; ++i)
    if (label[i] != ignore)
      total -= validLabel(label[i], c) ? static_cast<double>(x[i * c + label[i]]) : kNaN;
  *a.out[0].as<T>() = static_cast<T>(total / counted(label, n, ignore));
}

// nll_loss_backward %dy, %logp, %label -> -dy / counted at each counted row's label, zero
// elsewhere.
template <typename T> void nllLossBackward(const KernelArgs &a) {
  const int32_t *label = a.in[2].as<int32_t>();
  T *dx = a.out[0].as<T>();
  int64_t n = a.in[1].dim(0), c = a.in[1].dim(1), ignore = ignored(a);
  T g = static_cast<T>(-readScalar(a.in[0]) / counted(label, n, ignore));
  parallelFor(n, [&](int64_t i) {
    T *out = dx + i * c;
    bool skip = label[i] == ignore, valid = !skip && validLabel(label[i], c);
    std::fill(out, out + c, valid || skip ? T(0) : static_cast<T>(kNaN));
    if (valid) out[label[i]] = g;
  });
}

// mse_loss %pred, %target -> mean((pred - target)^2).
template <typename T> void mseLoss(const KernelArgs &a) {
  const T *p = a.in[0].as<T>();
  const T *t = a.in[1].as<T>();
  int64_t n = a.in[0].numel();
  double total = chunkedSum(n, [&](int64_t i) {
    double d = static_cast<double>(p[i]) - static_cast<double>(t[i]);
    return d * d;
  });
  *a.out[0].as<T>() = static_cast<T>(total / static_cast<double>(n));
}

// mse_loss_backward %dy, %pred, %target -> 2 * (pred - target) * dy / numel.
template <typename T> void mseLossBackward(const KernelArgs &a) {
  const T *p = a.in[1].as<T>();
  const T *t = a.in[2].as<T>();
  T *dx = a.out[0].as<T>();
  int64_t n = a.in[1].numel();
  T scale = static_cast<T>(2 * readScalar(a.in[0]) / static_cast<double>(n));
  parallelFor((n + kChunk - 1) / kChunk, [&](int64_t c) {
    for (int64_t i = c * kChunk, e = std::min(n, (c + 1) * kChunk); i < e; ++i)
      dx[i] = scale * (p[i] - t[i]);
  });
}

// bce_loss %prob, %target -> mean(-(t log p + (1 - t) log(1 - p))), each log
// clamped at -100 as PyTorch does so that p = 0 or 1 gives a finite loss.
template <typename T> void bceLoss(const KernelArgs &a) {
  const T *p = a.in[0].as<T>();
  const T *t = a.in[1].as<T>();
  int64_t n = a.in[0].numel();
  double total = chunkedSum(n, [&](int64_t i) {
    double pi = p[i], ti = t[i];
    double logP = std::max(std::log(pi), -100.0);
    double log1mP = std::max(std::log1p(-pi), -100.0);
    return (ti - 1) * log1mP - ti * logP;
  });
  *a.out[0].as<T>() = static_cast<T>(total / static_cast<double>(n));
}

// bce_loss_backward %dy, %prob, %target -> dy * (p - t) / max(p (1 - p), 1e-12) / numel.
template <typename T> void bceLossBackward(const KernelArgs &a) {
  const T *p = a.in[1].as<T>();
  const T *t = a.in[2].as<T>();
  T *dx = a.out[0].as<T>();
  int64_t n = a.in[1].numel();
  double scale = readScalar(a.in[0]) / static_cast<double>(n);
  parallelFor((n + kChunk - 1) / kChunk, [&](int64_t c) {
    for (int64_t i = c * kChunk, e = std::min(n, (c + 1) * kChunk); i < e; ++i) {
      double pi = p[i];
      dx[i] = static_cast<T>(scale * (pi - t[i]) / std::max((1 - pi) * pi, 1e-12));
    }
  });
}

// accuracy %logits, %label {k}: a sample is correct when fewer than k classes
// rank before its label: a class ranks before it when it scores higher, or
// the same with a lower index (ties go to the lower class, as argmax's first
// maximum: constant logits are right for class 0 only, at chance, not for
// every class), or its score is NaN; a NaN score of the label is a miss. Rows of
// ignore_index count neither way.
template <typename T> void accuracy(const KernelArgs &a) {
  const T *x = a.in[0].as<T>();
  const int32_t *label = a.in[1].as<int32_t>();
  int64_t n = a.in[0].dim(0), c = a.in[0].dim(1), ignore = ignored(a);
  int64_t k = a.op->attrs().getInt("k");
  std::vector<uint8_t> hit(static_cast<size_t>(n));
  parallelFor(n, [&](int64_t i) {
    const T *row = x + i * c;
    if (label[i] == ignore || !validLabel(label[i], c) || std::isnan(row[label[i]])) {
      hit[i] = 0;
      return;
    }
    T own = row[label[i]];
    int64_t before = 0;
    for (int64_t j = 0; j < c; ++j)
      before += row[j] > own || (row[j] == own && j < label[i]) || std::isnan(row[j]);
    hit[i] = before < k;
  });
  int64_t correct = 0;
  for (uint8_t h : hit) correct += h;
  *a.out[0].as<T>() = static_cast<T>(static_cast<double>(correct) / counted(label, n, ignore));
}

} // namespace

void registerLossKernels(KernelTable &t) {
  DTNN_REF_KERNEL(t, "softmax_cross_entropy", softmaxCrossEntropy);
  DTNN_REF_KERNEL(t, "softmax_cross_entropy_backward", softmaxCrossEntropyBackward);
  DTNN_REF_KERNEL(t, "nll_loss", nllLoss);
  DTNN_REF_KERNEL(t, "nll_loss_backward", nllLossBackward);
  DTNN_REF_KERNEL(t, "mse_loss", mseLoss);
  DTNN_REF_KERNEL(t, "mse_loss_backward", mseLossBackward);
  DTNN_REF_KERNEL(t, "bce_loss", bceLoss);
  DTNN_REF_KERNEL(t, "bce_loss_backward", bceLossBackward);
  DTNN_REF_KERNEL(t, "accuracy", accuracy);
}


} // namespace dtnn::reference
