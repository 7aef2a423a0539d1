// Reference kernels of dropout (declared in ir/ops/Norm.cpp) and of the ops
// declared in ir/ops/Dropout.cpp (dropout_train, drop_path, drop_path_train). The mask of
// element i is a pure function of (seed, step, i), with i counted in the
// global batch of a data-parallel run: a splitmix64 hash of a
// per-step key plus i times the golden-ratio increment, so the result does
// not depend on the thread count or on how the loop is split.
#include "backends/reference/KernelUtil.h"

#include <algorithm>

namespace dtnn::reference {

namespace {

// The splitmix64 finalizer: a bijective mix of 64 bits.
inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ull;

// The key of one (seed, step) pair; element i draws mix64(key + i * kGolden).
inline uint64_t dropoutKey(int64_t seed, int64_t step) {
  return mix64(mix64(static_cast<uint64_t>(seed) + kGolden) ^ static_cast<uint64_t>(step));
}

// Reads the integer step operand (i64 or i32).
int64_t readStep(const TensorView &v) {
  if (v.type.dtype == ir::DType::I32) return *v.as<int32_t>();
  return *v.as<int64_t>();
}

// The mask value of draw d of a training form's step: 1/(1-rate) when its 53-bit uniform part
// is at least rate (probability 1-rate), else 0; rate 0 drops nothing.
template <typename T> struct MaskDraws {
  uint64_t key;       // of (seed, step); draw d is mix64(key + d * kGolden)
  uint64_t threshold; // draws below it are dropped
  T keep;
  explicit MaskDraws(const KernelArgs &a) {
    double rate = a.op->attrs().getFloat("rate");
    key = dropoutKey(a.op->attrs().getInt("seed"), readStep(a.in[1]));
    threshold = static_cast<uint64_t>(rate * 0x1.0p53);
    keep = static_cast<T>(1 / (1 - rate));
  }
  T operator()(uint64_t d) const { return (mix64(key + d * kGolden) >> 11) >= threshold ? keep : T(0); }
};

// y = x * mask and mask, one draw an element.
template <typename T> void dropoutTrainKernel(const KernelArgs &a, int64_t first) {
  const T *x = a.in[0].as<T>();
  T *y = a.out[0].as<T>(), *mask = a.out[1].as<T>();
  MaskDraws<T> draws(a);
  int64_t n = a.in[0].numel();
  // Element i of this rank's part is element base + i of the global batch.
  uint64_t base = static_cast<uint64_t>(first) *
                  static_cast<uint64_t>(a.in[0].dim(0) ? n / a.in[0].dim(0) : 0);
  constexpr int64_t kChunk = 1 << 14;
  parallelFor((n + kChunk - 1) / kChunk, [&](int64_t chunk) {
    int64_t end = std::min(n, (chunk + 1) * kChunk);
    for (int64_t i = chunk * kChunk; i < end; ++i) {
      mask[i] = draws(base + static_cast<uint64_t>(i));
      y[i] = x[i] * mask[i];
    }
  });
}

// dropout_train keyed by the global sample index (ExecContext::offset).
class DropoutTrain : public runtime::Kernel {
public:
  explicit DropoutTrain(const runtime::KernelRequest &r) : Kernel(r) {}
  Error run(const KernelArgs &a, runtime::ExecContext &ctx) override {
    dispatchFloat(a.in[0].type.dtype,
                  [&](auto tag) { dropoutTrainKernel<decltype(tag)>(a, ctx.offset()); });
    return Error::success();
  }
};

// y = x * mask and mask for drop_path_train: sample s of the global batch (this rank's first
// sample is `first`) is kept with probability 1-rate, its elements all scaled by 1/(1-rate).
// The buffers hold `n` elements (padding included), each sample's a contiguous part.
template <typename T> void dropPathTrainKernel(const KernelArgs &a, int64_t first, int64_t n) {
  const T *x = a.in[0].as<T>();
  T *y = a.out[0].as<T>(), *mask = a.out[1].as<T>();
  MaskDraws<T> draws(a);
  int64_t samples = a.in[0].dim(0);
  int64_t per = samples ? n / samples : 0;
  parallelFor(samples, [&](int64_t s) {
    T m = draws(static_cast<uint64_t>(first + s));
    for (int64_t i = s * per; i < (s + 1) * per; ++i) {
      mask[i] = m;
      y[i] = x[i] * m;
    }
  });
}

// Scaling whole samples, it takes x in any layout that stores each sample
// contiguously (the batch dimension outermost and not blocked, as in
// oneDNN's channel-blocked and channels-last layouts), and gives y and the
// mask in that layout, so that no conversion surrounds it.
class DropPathTrain : public runtime::Kernel {
public:
  explicit DropPathTrain(const runtime::KernelRequest &r)
      : Kernel(r), elements_(runtime::numElements(r.in[0].type)) {
    const runtime::BufferDesc &x = r.in[0];
    const std::string &tag = x.layout.tag();
    int64_t samples = x.type.dims.empty() ? 0 : x.type.dims[0];
    if (x.layout.isPlain() || x.space != runtime::MemorySpace::Host || tag.empty() ||
        tag[0] != 'a' || tag.find('A') != std::string::npos || samples <= 0 ||
        x.bytes % (uint64_t(samples) * ir::dtypeSize(x.type.dtype)) != 0)
      return;
    in_[0] = x;
    out_ = {x, x};
    elements_ = int64_t(x.bytes / ir::dtypeSize(x.type.dtype));
  }
  Error run(const KernelArgs &a, runtime::ExecContext &ctx) override {
    dispatchFloat(a.in[0].type.dtype, [&](auto tag) {
      dropPathTrainKernel<decltype(tag)>(a, ctx.offset(), elements_);
    });
    return Error::success();
  }

private:
  int64_t elements_;
};

// Inference: dropout is the identity.
template <typename T> void dropoutKernel(const KernelArgs &a) {
  const T *x = a.in[0].as<T>();
  T *y = a.out[0].as<T>();
  if (x != y) std::copy(x, x + a.in[0].numel(), y);
}

} // namespace

void registerDropoutKernels(KernelTable &t) {
  DTNN_REF_KERNEL(t, "dropout", dropoutKernel);
  DTNN_REF_KERNEL(t, "drop_path", dropoutKernel);
  t.addKernel("drop_path_train",
              [](const runtime::KernelRequest &r) -> Expected<std::unique_ptr<runtime::Kernel>> {
                return std::unique_ptr<runtime::Kernel>(new DropPathTrain(r));
              },
              runtime::LayoutKind::Any);
  t.addKernel("dropout_train", [](const runtime::KernelRequest &r)
                                   -> Expected<std::unique_ptr<runtime::Kernel>> {
    return std::unique_ptr<runtime::Kernel>(new DropoutTrain(r));
  });
}


} // namespace dtnn::reference
