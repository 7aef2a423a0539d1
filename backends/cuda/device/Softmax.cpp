// softmax, log_softmax and their backward ops on the device
// (kernels/Softmax.h): the operand is split around the op's axis into
// [outer, n, inner] and the launch geometry fixed when the kernel is made.
#include "backends/cuda/device/Device.h"
#include "backends/cuda/device/kernels/Softmax.h"

namespace dtnn::cuda {

namespace {

// The [outer, n, inner] split of `t` at axis `axisAttr` (negative from the end), as the
// reference's splitAt.
SoftmaxShape shapeAt(const ir::TensorType &t, int64_t axisAttr) {
  int64_t rank = int64_t(t.rank());
  int64_t axis = axisAttr < 0 ? axisAttr + rank : axisAttr;
  SoftmaxShape s;
  for (int64_t d = 0; d < rank; ++d) (d < axis ? s.outer : d == axis ? s.n : s.inner) *= t.dims[d];
  return s;
}

// softmax %x or log_softmax %x {axis}.
template <typename T> class Softmax final : public DeviceOp {
public:
  Softmax(const DeviceKernelSpec &s, bool log)
      : plan_(planSoftmax(shapeAt(s.in[0].type, s.op->attrs().getInt("axis")), deviceInfo().multiprocessors)),
        log_(log) {}

  Error launch(const runtime::KernelArgs &a, const Launch &l) override {
    return check(launchSoftmax(a.in[0].as<const T>(), a.out[0].as<T>(), plan_, log_, l.stream),
                 log_ ? "log_softmax" : "softmax");
  }

private:
  SoftmaxPlan plan_;
  bool log_;
};

// softmax_backward %dy, %y or log_softmax_backward %dy, %y {axis}.
template <typename T> class SoftmaxBackward final : public DeviceOp {
public:
  SoftmaxBackward(const DeviceKernelSpec &s, bool log)
      : plan_(planSoftmax(shapeAt(s.in[0].type, s.op->attrs().getInt("axis")), deviceInfo().multiprocessors)),
        log_(log) {}

  Error launch(const runtime::KernelArgs &a, const Launch &l) override {
    return check(launchSoftmaxBackward(a.in[0].as<const T>(), a.in[1].as<const T>(), a.out[0].as<T>(),
                                       plan_, log_, l.stream),
                 log_ ? "log_softmax_backward" : "softmax_backward");
  }

private:
  SoftmaxPlan plan_;
  bool log_;
};

// The maker of kernel K (Softmax or SoftmaxBackward) at the operand's element type.
template <template <typename> class K> DeviceKernelMaker makerOf(bool log) {
  return [log](const DeviceKernelSpec &s) -> Expected<std::unique_ptr<DeviceKernel>> {
    switch (s.in[0].type.dtype) {
    case ir::DType::F32: return make<K<float>>(s, log);
    case ir::DType::F64: return make<K<double>>(s, log);
    default: return Error::make("the cuda " + s.kind + " takes f32 or f64, not " + s.in[0].type.str());
    }
  };
}

} // namespace

void registerSoftmaxKernels(DeviceRegistry &r) {
  r.add("softmax", makerOf<Softmax>(false));
  r.add("log_softmax", makerOf<Softmax>(true));
  r.add("softmax_backward", makerOf<SoftmaxBackward>(false));
  r.add("log_softmax_backward", makerOf<SoftmaxBackward>(true));
}

} // namespace dtnn::cuda
