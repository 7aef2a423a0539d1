// The losses and accuracy on the device (ir/ops/Loss.cpp; kernels/Loss.h):
// the shapes and attributes are read when the kernel is made, the labels
// (i32) and a backward op's scalar dy on the device. The loss is the mean
// over this rank's rows (or elements), as the reference's is.
#include "backends/cuda/device/Device.h"
#include "backends/cuda/device/kernels/Loss.h"

#include <string>

namespace dtnn::cuda {

namespace {

// The rows, classes and ignore_index of a classifier op whose scores are operand `at`.
ClassifierShape classifierOf(const DeviceKernelSpec &s, size_t at) {
  const ir::TensorType &x = s.in[at].type;
  return {x.dims[0], x.dims[1], s.op->attrs().getInt("ignore_index")};
}

double *workspaceOf(const runtime::KernelArgs &a) { return static_cast<double *>(a.workspace); }

// softmax_cross_entropy, nll_loss or accuracy %x, %label.
template <typename T> class Classifier final : public DeviceOp {
public:
  explicit Classifier(const DeviceKernelSpec &s) : kind_(s.kind), shape_(classifierOf(s, 0)) {
    if (kind_ == "accuracy") k_ = s.op->attrs().getInt("k");
  }

  Error launch(const runtime::KernelArgs &a, const Launch &l) override {
    const T *x = a.in[0].as<const T>();
    const int32_t *label = a.in[1].as<const int32_t>();
    T *y = a.out[0].as<T>();
    cudaError_t e = kind_ == "accuracy" ? launchAccuracy(x, label, y, workspaceOf(a), shape_, k_, l.stream)
                    : kind_ == "nll_loss"
                        ? launchNllLoss(x, label, y, shape_, l.stream)
                        : launchSoftmaxCrossEntropy(x, label, y, workspaceOf(a), shape_, l.stream);
    return check(e, kind_.c_str());
  }

private:
  std::string kind_;
  ClassifierShape shape_;
  int64_t k_ = 1;
};

// softmax_cross_entropy_backward or nll_loss_backward %dy, %x, %label.
template <typename T> class ClassifierBackward final : public DeviceOp {
public:
  explicit ClassifierBackward(const DeviceKernelSpec &s) : kind_(s.kind), shape_(classifierOf(s, 1)) {}

  Error launch(const runtime::KernelArgs &a, const Launch &l) override {
    const T *dy = a.in[0].as<const T>();
    const int32_t *label = a.in[2].as<const int32_t>();
    T *dx = a.out[0].as<T>();
    cudaError_t e = kind_ == "nll_loss_backward"
                        ? launchNllLossBackward(dy, label, dx, workspaceOf(a), shape_, l.stream)
                        : launchSoftmaxCrossEntropyBackward(dy, a.in[1].as<const T>(), label, dx,
                                                            workspaceOf(a), shape_, l.stream);
    return check(e, kind_.c_str());
  }

private:
  std::string kind_;
  ClassifierShape shape_;
};

// mse_loss or bce_loss %p, %t.
template <typename T> class ElementLoss final : public DeviceOp {
public:
  explicit ElementLoss(const DeviceKernelSpec &s)
      : bce_(s.kind == "bce_loss"), n_(elementsOf(s.in[0].type)) {}

  Error launch(const runtime::KernelArgs &a, const Launch &l) override {
    const T *p = a.in[0].as<const T>(), *t = a.in[1].as<const T>();
    T *y = a.out[0].as<T>();
    if (bce_) return check(launchBceLoss(p, t, y, workspaceOf(a), n_, l.stream), "bce_loss");
    return check(launchMseLoss(p, t, y, workspaceOf(a), n_, l.stream), "mse_loss");
  }

private:
  bool bce_;
  int64_t n_;
};

// mse_loss_backward or bce_loss_backward %dy, %p, %t.
template <typename T> class ElementLossBackward final : public DeviceOp {
public:
  explicit ElementLossBackward(const DeviceKernelSpec &s)
      : bce_(s.kind == "bce_loss_backward"), n_(elementsOf(s.in[1].type)) {}

  Error launch(const runtime::KernelArgs &a, const Launch &l) override {
    const T *dy = a.in[0].as<const T>(), *p = a.in[1].as<const T>(), *t = a.in[2].as<const T>();
    T *dx = a.out[0].as<T>();
    if (bce_) return check(launchBceLossBackward(dy, p, t, dx, n_, l.stream), "bce_loss_backward");
    return check(launchMseLossBackward(dy, p, t, dx, n_, l.stream), "mse_loss_backward");
  }

private:
  bool bce_;
  int64_t n_;
};

// The maker of kernel K at the element type of operand 0, f32 or f64.
template <template <typename> class K> DeviceKernelMaker floatMaker() {
  return [](const DeviceKernelSpec &s) -> Expected<std::unique_ptr<DeviceKernel>> {
    switch (s.in[0].type.dtype) {
    case ir::DType::F32: return make<K<float>>(s);
    case ir::DType::F64: return make<K<double>>(s);
    default: return Error::make("the cuda " + s.kind + " takes f32 or f64, not " + s.in[0].type.str());
    }
  };
}

} // namespace

void registerLossKernels(DeviceRegistry &r) {
  for (const char *kind : {"softmax_cross_entropy", "nll_loss", "accuracy"})
    r.add(kind, floatMaker<Classifier>());
  for (const char *kind : {"softmax_cross_entropy_backward", "nll_loss_backward"})
    r.add(kind, floatMaker<ClassifierBackward>());
  for (const char *kind : {"mse_loss", "bce_loss"}) r.add(kind, floatMaker<ElementLoss>());
  for (const char *kind : {"mse_loss_backward", "bce_loss_backward"})
    r.add(kind, floatMaker<ElementLossBackward>());
}

} // namespace dtnn::cuda
