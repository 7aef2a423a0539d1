// Dropout on the device (ir/ops/Dropout.cpp, ir/ops/Norm.cpp): the training
// forms draw the reference's masks (kernels/Dropout.h), counting each draw in
// the step's global batch from the rank's first sample (Launch::offset); the
// inference forms, dropout and drop_path, pass their input through, copying
// it unless the result already has the operand's storage.
#include "backends/cuda/device/Device.h"
#include "backends/cuda/device/kernels/Dropout.h"

namespace dtnn::cuda {

namespace {

// The mask parameters of a training form, as the reference's MaskDraws.
template <typename T> MaskSpec<T> maskSpecOf(const ir::Op &op) {
  double rate = op.attrs().getFloat("rate");
  return {op.attrs().getInt("seed"), static_cast<uint64_t>(rate * 0x1.0p53), static_cast<T>(1 / (1 - rate))};
}

// The elements of each sample of x [N, ...] (0 without samples).
int64_t perSample(const ir::TensorType &x) { return x.dims[0] ? elementsOf(x) / x.dims[0] : 0; }

// dropout_train %x, %step {rate, seed}: y = x * mask and the mask, one draw an element, element
// i of this rank's part being draw offset * perSample + i of the global batch.
template <typename T> class DropoutTrain final : public DeviceOp {
public:
  explicit DropoutTrain(const DeviceKernelSpec &s)
      : spec_(maskSpecOf<T>(*s.op)), n_(elementsOf(s.in[0].type)), per_(perSample(s.in[0].type)) {}

  Error launch(const runtime::KernelArgs &a, const Launch &l) override {
    uint64_t base = static_cast<uint64_t>(l.offset) * static_cast<uint64_t>(per_);
    return check(launchDropoutTrain(a.in[0].as<const T>(), a.in[1].as<const int64_t>(), a.out[0].as<T>(),
                                    a.out[1].as<T>(), n_, base, spec_, l.stream),
                 "dropout_train");
  }

private:
  MaskSpec<T> spec_;
  int64_t n_, per_;
};

// drop_path_train %x, %step {rate, seed}: sample s of this rank's part (draw offset + s) kept
// whole, scaled, or zeroed.
template <typename T> class DropPathTrain final : public DeviceOp {
public:
  explicit DropPathTrain(const DeviceKernelSpec &s)
      : spec_(maskSpecOf<T>(*s.op)), samples_(s.in[0].type.dims[0]), per_(perSample(s.in[0].type)) {}

  Error launch(const runtime::KernelArgs &a, const Launch &l) override {
    return check(launchDropPathTrain(a.in[0].as<const T>(), a.in[1].as<const int64_t>(), a.out[0].as<T>(),
                                     a.out[1].as<T>(), samples_, per_, l.offset, spec_, l.stream),
                 "drop_path_train");
  }

private:
  MaskSpec<T> spec_;
  int64_t samples_, per_;
};

// The maker of training form K at x's element type.
template <template <typename> class K> DeviceKernelMaker trainMaker() {
  return [](const DeviceKernelSpec &s) -> Expected<std::unique_ptr<DeviceKernel>> {
    if (s.in[0].type.rank() == 0)
      return Error::make("the cuda " + s.kind + " takes x with a sample dimension");
    switch (s.in[0].type.dtype) {
    case ir::DType::F32: return make<K<float>>(s);
    case ir::DType::F64: return make<K<double>>(s);
    default: return Error::make("the cuda " + s.kind + " takes f32 or f64, not " + s.in[0].type.str());
    }
  };
}

} // namespace

void registerDropoutKernels(DeviceRegistry &r) {
  r.add("dropout_train", trainMaker<DropoutTrain>());
  r.add("drop_path_train", trainMaker<DropPathTrain>());
  // At inference, y = x.
  r.add("dropout", makeSameBytes);
  r.add("drop_path", makeSameBytes);
}

} // namespace dtnn::cuda
