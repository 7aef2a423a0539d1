// Reference kernels of the ops declared in ir/ops/Optimizer.cpp. Each update
// writes the parameter (operand 0) and its state buffers in place. The
// per-step scalars (bias corrections, step sizes) are computed in double as
// PyTorch computes them in Python; the elementwise arithmetic runs in the
// parameter's type, in PyTorch's order of operations. Updates are
// elementwise, so splitting them over threads does not change results.
#include "backends/reference/KernelUtil.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace dtnn::reference {

namespace {

// Elements per parallel work item.
constexpr int64_t kChunk = 4096;

// Runs body(begin, end) over chunks of [0, n) in parallel.
template <typename Body> void forChunks(int64_t n, Body &&body) {
  parallelFor((n + kChunk - 1) / kChunk,
              [&](int64_t c) { body(c * kChunk, std::min(n, (c + 1) * kChunk)); });
}

// Runs body(i) for every element i in [0, n), in parallel chunks.
template <typename Body> void forElements(int64_t n, Body &&body) {
  forChunks(n, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) body(i);
  });
}

double attr(const KernelArgs &a, const char *name) { return a.op->attrs().getFloat(name); }

// The per-step scalars of SGD, in double, as PyTorch computes them; the
// update and sgd_coefficients (its fused form's) both round them to the
// parameter's type.
struct SgdScalars {
  double lr, momentum, keep, wd;
  bool first; // the first step: the momentum buffer starts at the gradient
};
SgdScalars sgdScalars(const KernelArgs &a) {
  return {readScalar(a.in[2]), attr(a, "momentum"), 1 - attr(a, "dampening"),
          attr(a, "weight_decay"), readScalar(a.in[3]) <= 1};
}

// Adam's and AdamW's: the moments' factors, the step size lr / (1 - beta1^t),
// sqrt(1 - beta2^t), and the weight decay added to the gradient (Adam) or
// the factor the parameter is multiplied by first (AdamW).
struct AdamScalars {
  double beta1, beta2, eps, stepSize, bc2Sqrt, l2, decay;
};
AdamScalars adamScalars(const KernelArgs &a, bool decoupled) {
  double lr = readScalar(a.in[2]), step = readScalar(a.in[3]), wd = attr(a, "weight_decay");
  double beta1 = attr(a, "beta1"), beta2 = attr(a, "beta2");
  return {beta1,
          beta2,
          attr(a, "eps"),
          lr / (1 - std::pow(beta1, step)),
          std::sqrt(1 - std::pow(beta2, step)),
          decoupled ? 0 : wd,
          decoupled ? 1 - lr * wd : 1};
}

// sgd_update %p, %g, %lr [, %step, %buf] {momentum, dampening, nesterov, weight_decay}:
//   d = g + wd p; buf = d on step 1, else momentum buf + (1 - dampening) d;
//   d = nesterov ? d + momentum buf : buf; p -= lr d.
template <typename T> void sgdUpdate(const KernelArgs &a) {
  T *p = a.in[0].as<T>();
  const T *g = a.in[1].as<T>();
  int64_t n = a.in[0].numel();
  T momentum = static_cast<T>(attr(a, "momentum"));
  if (momentum == 0) {
    T lr = static_cast<T>(readScalar(a.in[2]));
    T wd = static_cast<T>(attr(a, "weight_decay"));
    forChunks(n, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) p[i] -= lr * (g[i] + wd * p[i]);
    });
    return;
  }
  SgdScalars sc = sgdScalars(a);
  T lr = static_cast<T>(sc.lr), wd = static_cast<T>(sc.wd), keep = static_cast<T>(sc.keep);
  bool first = sc.first;
  T *buf = a.in[4].as<T>();
  bool nesterov = a.op->attrs().getBool("nesterov");
  // The common case (no decay, not the first step, not Nesterov) in a loop
  // without branches, which the compiler vectorizes.
  if (wd == 0 && !first && !nesterov) {
    forChunks(n, [=](int64_t b, int64_t e) { // by value, as in adamCore
      T *__restrict pp = p, *__restrict bb = buf;
      const T *__restrict gg = g;
      for (int64_t i = b; i < e; ++i) {
        bb[i] = momentum * bb[i] + keep * gg[i];
        pp[i] -= lr * bb[i];
      }
    });
    return;
  }
  forElements(n, [&](int64_t i) {
    T d = wd != 0 ? g[i] + wd * p[i] : g[i];
    buf[i] = first ? d : momentum * buf[i] + keep * d;
    d = nesterov ? d + momentum * buf[i] : buf[i];
    p[i] -= lr * d;
  });
}

// The Adam and AdamW update after any decoupled decay: moments, bias
// corrections, then p -= lr / bc1 * m / (sqrt(v) / sqrt(bc2) + eps); with
// amsgrad, max_v = max(max_v, v) takes v's place in the denominator.
template <typename T> void adamCore(const KernelArgs &a, const AdamScalars &sc) {
  T *p = a.in[0].as<T>();
  const T *g = a.in[1].as<T>();
  T *m = a.in[4].as<T>();
  T *v = a.in[5].as<T>();
  T *maxV = a.op->attrs().getBool("amsgrad") ? a.in[6].as<T>() : nullptr;
  int64_t n = a.in[0].numel();
  T b1 = static_cast<T>(sc.beta1), b2 = static_cast<T>(sc.beta2);
  T c1 = static_cast<T>(1 - sc.beta1), c2 = static_cast<T>(1 - sc.beta2);
  T eps = static_cast<T>(sc.eps), wd = static_cast<T>(sc.l2);
  T stepSize = static_cast<T>(sc.stepSize);
  T bc2Sqrt = static_cast<T>(sc.bc2Sqrt);
  if (wd == 0 && !maxV) { // the common case, without branches: vectorized
    // Captured by value, restrict locals: otherwise a store through a
    // pointer could change a captured pointer or scalar, which stops
    // vectorization.
    forChunks(n, [=](int64_t b, int64_t e) {
      T *__restrict pp = p, *__restrict mm = m, *__restrict vv = v;
      const T *__restrict gg = g;
      for (int64_t i = b; i < e; ++i) {
        mm[i] = b1 * mm[i] + c1 * gg[i];
        vv[i] = b2 * vv[i] + c2 * gg[i] * gg[i];
        pp[i] -= stepSize * (mm[i] / (std::sqrt(vv[i]) / bc2Sqrt + eps));
      }
    });
    return;
  }
  forElements(n, [&](int64_t i) {
    T gi = wd != 0 ? g[i] + wd * p[i] : g[i];
    m[i] = b1 * m[i] + c1 * gi;
    v[i] = b2 * v[i] + c2 * gi * gi;
    T second = v[i];
    if (maxV) second = maxV[i] = std::max(maxV[i], v[i]);
    p[i] -= stepSize * (m[i] / (std::sqrt(second) / bc2Sqrt + eps));
  });
}

// adam_update %p, %g, %lr, %step, %m, %v {beta1, beta2, eps, weight_decay}:
// weight decay is added to the gradient (L2), as torch.optim.Adam does.
template <typename T> void adamUpdate(const KernelArgs &a) { adamCore<T>(a, adamScalars(a, false)); }

// adamw_update: p *= 1 - lr wd first (decoupled decay), then Adam without L2.
template <typename T> void adamwUpdate(const KernelArgs &a) {
  AdamScalars sc = adamScalars(a, true);
  T *p = a.in[0].as<T>();
  T decay = static_cast<T>(sc.decay);
  if (decay != 1) forElements(a.in[0].numel(), [&](int64_t i) { p[i] *= decay; });
  adamCore<T>(a, sc);
}

// The coefficients ops (ir/ops/Optimizer.cpp), the scalars above rounded to
// lr's type, in the order the op declares its results. Their operands are
// lr and step, where the updates' are param, grad, lr and step.
KernelArgs asUpdateArgs(const KernelArgs &a) {
  KernelArgs u = a;
  u.in.insert(u.in.begin(), 2, TensorView{});
  return u;
}

template <typename T> void writeScalars(const KernelArgs &a, const std::vector<double> &values) {
  for (size_t i = 0; i < values.size(); ++i) *a.out[i].as<T>() = static_cast<T>(values[i]);
}

template <typename T> void sgdCoefficients(const KernelArgs &a) {
  SgdScalars sc = sgdScalars(asUpdateArgs(a));
  writeScalars<T>(a, {sc.lr, sc.first ? 0 : sc.momentum, sc.first ? 1 : sc.keep, sc.momentum,
                      sc.wd});
}

template <typename T> void adamFamilyCoefficients(const KernelArgs &a, bool decoupled) {
  AdamScalars sc = adamScalars(asUpdateArgs(a), decoupled);
  writeScalars<T>(a, {sc.beta1, 1 - sc.beta1, sc.beta2, 1 - sc.beta2, sc.eps, sc.stepSize,
                      sc.bc2Sqrt, sc.l2, sc.decay});
}
template <typename T> void adamCoefficients(const KernelArgs &a) {
  adamFamilyCoefficients<T>(a, false);
}
template <typename T> void adamwCoefficients(const KernelArgs &a) {
  adamFamilyCoefficients<T>(a, true);
}

// rmsprop_update %p, %g, %lr, %square_avg [, %buf] [, %grad_avg]
//     {alpha, eps, weight_decay, momentum, centered}:
//   g += wd p; sq = alpha sq + (1 - alpha) g^2; avg = sqrt(sq) + eps, or when
//   centered ga = alpha ga + (1 - alpha) g, avg = sqrt(sq - ga^2) + eps;
//   with momentum: buf = momentum buf + g / avg, p -= lr buf; else p -= lr g / avg.
template <typename T> void rmspropUpdate(const KernelArgs &a) {
  T *p = a.in[0].as<T>();
  const T *g = a.in[1].as<T>();
  T *sq = a.in[3].as<T>();
  size_t next = 4;
  T *buf = attr(a, "momentum") != 0 ? a.in[next++].as<T>() : nullptr;
  T *gradAvg = a.op->attrs().getBool("centered") ? a.in[next].as<T>() : nullptr;
  int64_t n = a.in[0].numel();
  T lr = static_cast<T>(readScalar(a.in[2]));
  double alpha = attr(a, "alpha");
  T keep = static_cast<T>(alpha), mix = static_cast<T>(1 - alpha);
  T eps = static_cast<T>(attr(a, "eps")), wd = static_cast<T>(attr(a, "weight_decay"));
  T momentum = static_cast<T>(attr(a, "momentum"));
  forElements(n, [&](int64_t i) {
    T gi = wd != 0 ? g[i] + wd * p[i] : g[i];
    sq[i] = keep * sq[i] + mix * gi * gi;
    T avg;
    if (gradAvg) {
      gradAvg[i] = gradAvg[i] * keep + mix * gi;
      avg = std::sqrt(sq[i] - gradAvg[i] * gradAvg[i]) + eps;
    } else {
      avg = std::sqrt(sq[i]) + eps;
    }
    if (buf) {
      buf[i] = momentum * buf[i] + gi / avg;
      p[i] -= lr * buf[i];
    } else {
      p[i] -= lr * (gi / avg);
    }
  });
}

// nadam_update %p, %g, %lr, %step, %m, %v, %mu_product {beta1, beta2, eps,
// weight_decay, momentum_decay}, with mu_t = beta1 (1 - 0.5 * 0.96^(t md)):
//   mu_product *= mu_t; m, v as Adam; denom = sqrt(v / bc2) + eps;
//   p -= lr (1 - mu_t) / (1 - mu_product) g / denom
//   p -= lr mu_{t+1} / (1 - mu_product mu_{t+1}) m / denom.
// The second product is mu_product * mu_{t+1}, as in PyTorch since 2.0 (1.x
// multiplied by mu_t twice).
template <typename T> void nadamUpdate(const KernelArgs &a) {
  T *p = a.in[0].as<T>();
  const T *g = a.in[1].as<T>();
  T *m = a.in[4].as<T>();
  T *v = a.in[5].as<T>();
  T *muProduct = a.in[6].as<T>();
  int64_t n = a.in[0].numel();
  double lr = readScalar(a.in[2]), step = readScalar(a.in[3]);
  double beta1 = attr(a, "beta1"), beta2 = attr(a, "beta2");
  double decay = attr(a, "momentum_decay");
  double mu = beta1 * (1 - 0.5 * std::pow(0.96, step * decay));
  double muNext = beta1 * (1 - 0.5 * std::pow(0.96, (step + 1) * decay));
  *muProduct = static_cast<T>(*muProduct * mu);
  double product = *muProduct;
  T gradStep = static_cast<T>(-lr * (1 - mu) / (1 - product));
  T momentumStep = static_cast<T>(-lr * muNext / (1 - product * muNext));
  T b1 = static_cast<T>(beta1), b2 = static_cast<T>(beta2);
  T c1 = static_cast<T>(1 - beta1), c2 = static_cast<T>(1 - beta2);
  T bc2 = static_cast<T>(1 - std::pow(beta2, step));
  T eps = static_cast<T>(attr(a, "eps")), wd = static_cast<T>(attr(a, "weight_decay"));
  forElements(n, [&](int64_t i) {
    T gi = wd != 0 ? g[i] + wd * p[i] : g[i];
    m[i] = b1 * m[i] + c1 * gi;
    v[i] = b2 * v[i] + c2 * gi * gi;
    T denom = std::sqrt(v[i] / bc2) + eps;
    p[i] += gradStep * (gi / denom);
    p[i] += momentumStep * (m[i] / denom);
  });
}

} // namespace

// The updates are elementwise over whole buffers, so they run on the
// parameter's layout, whatever it is: its padding holds zeros in the
// parameter, the gradient and the state alike, and stays zero.
#define DTNN_REF_UPDATE(table, opName, fn)                                                         \
  (table).addSameLayout(opName, [](const KernelArgs &a) {                                          \
    dispatchFloat(a.in[0].type.dtype, [&](auto tag) { fn<decltype(tag)>(a); });                    \
  })

void registerOptimizerKernels(KernelTable &t) {
  DTNN_REF_UPDATE(t, "sgd_update", sgdUpdate);
  DTNN_REF_UPDATE(t, "adam_update", adamUpdate);
  DTNN_REF_UPDATE(t, "adamw_update", adamwUpdate);
  DTNN_REF_UPDATE(t, "rmsprop_update", rmspropUpdate);
  DTNN_REF_UPDATE(t, "nadam_update", nadamUpdate);
  DTNN_REF_KERNEL(t, "sgd_coefficients", sgdCoefficients);
  DTNN_REF_KERNEL(t, "adam_coefficients", adamCoefficients);
  DTNN_REF_KERNEL(t, "adamw_coefficients", adamwCoefficients);
}


} // namespace dtnn::reference
