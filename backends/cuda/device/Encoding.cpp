// one_hot, normalize, embedding and embedding_backward on the device
// (kernels/Encoding.h), dispatched on the type of their floating-point side:
// the result (one_hot, normalize, embedding) or dy (embedding_backward).
#include "backends/cuda/device/Device.h"
#include "backends/cuda/device/kernels/Encoding.h"

namespace dtnn::cuda {

namespace {

// one_hot %label {classes, dtype}: out [n, classes].
template <typename T> class OneHot final : public DeviceOp {
public:
  explicit OneHot(const DeviceKernelSpec &s) : n_(s.out[0].type.dims[0]), classes_(s.out[0].type.dims[1]) {}

  Error launch(const runtime::KernelArgs &a, const Launch &l) override {
    return check(launchOneHot(a.in[0].as<const int32_t>(), a.out[0].as<T>(), n_, classes_, l.stream),
                 "one_hot");
  }

private:
  int64_t n_, classes_;
};

// normalize %x {mean, std, dtype}: u8 images [n, channels, ...] as T, the statistics rounded to
// T as the reference's tables round them.
template <typename T> class Normalize final : public DeviceOp {
public:
  explicit Normalize(const DeviceKernelSpec &s) {
    const ir::TensorType &x = s.in[0].type;
    channels_ = x.dims[1];
    rows_ = x.dims[0] * channels_;
    plane_ = rows_ ? elementsOf(x) / rows_ : 0;
    const std::vector<double> &mean = s.op->attrs().getFloats("mean"), &std = s.op->attrs().getFloats("std");
    stats_.count = int(mean.size());
    for (size_t c = 0; c < mean.size(); ++c) {
      stats_.mean[c] = T(mean[c]);
      stats_.std[c] = T(std[c]);
    }
  }

  Error launch(const runtime::KernelArgs &a, const Launch &l) override {
    return check(launchNormalize(a.in[0].as<const uint8_t>(), a.out[0].as<T>(), rows_, channels_, plane_,
                                 stats_, l.stream),
                 "normalize");
  }

private:
  int64_t rows_ = 0, channels_ = 0, plane_ = 0;
  NormalizeStats<T> stats_;
};

// embedding %indices, %weight {padding_idx}: y [..., d] from weight [v, d].
template <typename T> class Embedding final : public DeviceOp {
public:
  explicit Embedding(const DeviceKernelSpec &s)
      : tokens_(elementsOf(s.in[0].type)), v_(s.in[1].type.dims[0]), d_(s.in[1].type.dims[1]) {}

  Error launch(const runtime::KernelArgs &a, const Launch &l) override {
    return check(launchEmbedding(a.in[0].as<const int32_t>(), a.in[1].as<const T>(), a.out[0].as<T>(),
                                 tokens_, v_, d_, l.stream),
                 "embedding");
  }

private:
  int64_t tokens_, v_, d_;
};

// embedding_backward %dy, %indices, %weight {padding_idx}: dw [v, d] (the weight operand gives
// only its shape).
template <typename T> class EmbeddingBackward final : public DeviceOp {
public:
  explicit EmbeddingBackward(const DeviceKernelSpec &s)
      : tokens_(elementsOf(s.in[1].type)), v_(s.out[0].type.dims[0]), d_(s.out[0].type.dims[1]),
        pad_(s.op->attrs().getInt("padding_idx")) {}

  Error launch(const runtime::KernelArgs &a, const Launch &l) override {
    return check(launchEmbeddingBackward(a.in[0].as<const T>(), a.in[1].as<const int32_t>(), a.out[0].as<T>(),
                                         tokens_, v_, d_, pad_, l.stream),
                 "embedding_backward");
  }

private:
  int64_t tokens_, v_, d_, pad_;
};

// The maker of kernel K at the element type of `type(spec)`.
template <template <typename> class K>
DeviceKernelMaker makerOf(const ir::TensorType &(*type)(const DeviceKernelSpec &)) {
  return [type](const DeviceKernelSpec &s) -> Expected<std::unique_ptr<DeviceKernel>> {
    switch (type(s).dtype) {
    case ir::DType::F32: return make<K<float>>(s);
    case ir::DType::F64: return make<K<double>>(s);
    default: return Error::make("the cuda " + s.kind + " computes in f32 or f64, not " + type(s).str());
    }
  };
}

const ir::TensorType &resultType(const DeviceKernelSpec &s) { return s.out[0].type; }
const ir::TensorType &operandType(const DeviceKernelSpec &s) { return s.in[0].type; }

} // namespace

void registerEncodingKernels(DeviceRegistry &r) {
  r.add("one_hot", makerOf<OneHot>(resultType));
  r.add("embedding", makerOf<Embedding>(resultType));
  r.add("embedding_backward", makerOf<EmbeddingBackward>(operandType));
  r.add("normalize", [](const DeviceKernelSpec &s) -> Expected<std::unique_ptr<DeviceKernel>> {
    if (s.op->attrs().getFloats("mean").size() > size_t(kNormalizeChannels))
      return Error::make("the cuda normalize takes at most " + std::to_string(kNormalizeChannels) +
                         " channels' statistics");
    return makerOf<Normalize>(resultType)(s);
  });
}

} // namespace dtnn::cuda
