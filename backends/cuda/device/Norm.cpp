// The batch normalization ops on the device (kernels/Norm.h): batchnorm,
// batchnorm_train, batchnorm_backward, batchnorm_backward_frozen,
// batchnorm_fold and moving_average. Attributes are read when the kernel is
// made and rounded where the reference rounds them; the [N,C,S] view is
// taken from each launch's operands.
#include "backends/cuda/device/Device.h"
#include "backends/cuda/device/kernels/Norm.h"
#include "ir/ops/FusedActivation.h"

#include <algorithm>

namespace dtnn::cuda {

namespace {

// The [N,C,S] view of a batch norm's input x, as the reference's NormShape.
NormShape shapeOf(const runtime::TensorView &x) {
  NormShape s;
  s.n = x.dim(0), s.c = x.dim(1);
  s.s = s.n * s.c == 0 ? 0 : x.numel() / (s.n * s.c);
  return s;
}

NormAct normActOf(const ir::Op &op) {
  std::string a = ir::fusedActivationOf(op);
  if (a == "relu") return NormAct::Relu;
  if (a == "relu6") return NormAct::Relu6;
  if (a == "sigmoid") return NormAct::Sigmoid;
  if (a == "tanh") return NormAct::Tanh;
  return NormAct::None;
}

// batchnorm %x, %gamma, %beta, %mean, %var {eps, act}.
template <typename T> class BatchNorm final : public DeviceOp {
public:
  explicit BatchNorm(const DeviceKernelSpec &s)
      : eps_(static_cast<T>(s.op->attrs().getFloat("eps"))), act_(normActOf(*s.op)) {}

  Error launch(const runtime::KernelArgs &a, const Launch &l) override {
    NormParams<T> p = {a.in[1].as<const T>(), a.in[2].as<const T>(), a.in[3].as<const T>(),
                       a.in[4].as<const T>()};
    return check(launchBatchNorm<T>(a.in[0].as<const T>(), p, a.out[0].as<T>(), shapeOf(a.in[0]), eps_,
                                    act_, l.stream),
                 "batchnorm");
  }

private:
  T eps_;
  NormAct act_;
};

// %y, %mean, %invstd = batchnorm_train %x, %gamma, %beta, %running_mean, %running_var
// {eps, momentum, act}, the running statistics updated in place.
template <typename T> class BatchNormTrain final : public DeviceOp {
public:
  explicit BatchNormTrain(const DeviceKernelSpec &s)
      : eps_(s.op->attrs().getFloat("eps")), momentum_(s.op->attrs().getFloat("momentum")),
        act_(normActOf(*s.op)) {}

  Error launch(const runtime::KernelArgs &a, const Launch &l) override {
    NormTrainArgs<T> t = {a.in[0].as<const T>(), a.in[1].as<const T>(), a.in[2].as<const T>(),
                          a.in[3].as<T>(),       a.in[4].as<T>(),       a.out[0].as<T>(),
                          a.out[1].as<T>(),      a.out[2].as<T>()};
    return check(launchBatchNormTrain<T>(t, shapeOf(a.in[0]), eps_, momentum_, act_, a.workspace, l.stream),
                 "batchnorm_train");
  }

private:
  double eps_, momentum_;
  NormAct act_;
};

// %dx, %dgamma, %dbeta = batchnorm_backward %dy, %x, %gamma, %mean, %invstd.
template <typename T> class BatchNormBackward final : public DeviceOp {
public:
  explicit BatchNormBackward(const DeviceKernelSpec &) {}

  Error launch(const runtime::KernelArgs &a, const Launch &l) override {
    NormGrads<T> g = {a.out[0].as<T>(), a.out[1].as<T>(), a.out[2].as<T>()};
    return check(launchBatchNormBackward<T>(a.in[0].as<const T>(), a.in[1].as<const T>(),
                                            a.in[2].as<const T>(), a.in[3].as<const T>(),
                                            a.in[4].as<const T>(), g, shapeOf(a.in[1]), a.workspace,
                                            l.stream),
                 "batchnorm_backward");
  }
};

// %dx, %dgamma, %dbeta = batchnorm_backward_frozen %dy, %x, %gamma, %mean, %var {eps}.
template <typename T> class BatchNormBackwardFrozen final : public DeviceOp {
public:
  explicit BatchNormBackwardFrozen(const DeviceKernelSpec &s)
      : eps_(static_cast<T>(s.op->attrs().getFloat("eps"))) {}

  Error launch(const runtime::KernelArgs &a, const Launch &l) override {
    NormGrads<T> g = {a.out[0].as<T>(), a.out[1].as<T>(), a.out[2].as<T>()};
    return check(launchBatchNormBackwardFrozen<T>(a.in[0].as<const T>(), a.in[1].as<const T>(),
                                                  a.in[2].as<const T>(), a.in[3].as<const T>(),
                                                  a.in[4].as<const T>(), eps_, g, shapeOf(a.in[1]),
                                                  a.workspace, l.stream),
                 "batchnorm_backward_frozen");
  }

private:
  T eps_;
};

// %w', %b' = batchnorm_fold %weight, %gamma, %beta, %mean, %var [, %bias] {eps}.
template <typename T> class BatchNormFold final : public DeviceOp {
public:
  explicit BatchNormFold(const DeviceKernelSpec &s) : eps_(static_cast<T>(s.op->attrs().getFloat("eps"))) {}

  Error launch(const runtime::KernelArgs &a, const Launch &l) override {
    NormParams<T> p = {a.in[1].as<const T>(), a.in[2].as<const T>(), a.in[3].as<const T>(),
                       a.in[4].as<const T>()};
    const T *bias = a.in.size() > 5 ? a.in[5].as<const T>() : nullptr;
    const int64_t k = a.in[0].dim(0), per = a.in[0].numel() / std::max<int64_t>(1, k);
    return check(launchBatchNormFold<T>(a.in[0].as<const T>(), p, bias, a.out[0].as<T>(), a.out[1].as<T>(),
                                        k, per, eps_, l.stream),
                 "batchnorm_fold");
  }

private:
  T eps_;
};

// moving_average %buf, %value {momentum}, buf updated in place.
template <typename T> class MovingAverage final : public DeviceOp {
public:
  explicit MovingAverage(const DeviceKernelSpec &s) : momentum_(s.op->attrs().getFloat("momentum")) {}

  Error launch(const runtime::KernelArgs &a, const Launch &l) override {
    return check(launchMovingAverage<T>(a.in[0].as<T>(), a.in[1].as<const T>(), a.in[0].numel(), momentum_,
                                        l.stream),
                 "moving_average");
  }

private:
  double momentum_;
};

// The maker of kernel K at the element type of the spec's operand 0.
template <template <typename> class K> DeviceKernelMaker floatMaker() {
  return [](const DeviceKernelSpec &s) -> Expected<std::unique_ptr<DeviceKernel>> {
    if (!s.op || s.in.empty()) return Error::make("a batch norm kernel without its op");
    switch (s.in[0].type.dtype) {
    case ir::DType::F32: return make<K<float>>(s);
    case ir::DType::F64: return make<K<double>>(s);
    default: return Error::make("the cuda " + s.kind + " takes f32 or f64, not " + s.in[0].type.str());
    }
  };
}

} // namespace

void registerNormKernels(DeviceRegistry &r) {
  r.add("batchnorm", floatMaker<BatchNorm>());
  r.add("batchnorm_train", floatMaker<BatchNormTrain>());
  r.add("batchnorm_backward", floatMaker<BatchNormBackward>());
  r.add("batchnorm_backward_frozen", floatMaker<BatchNormBackwardFrozen>());
  r.add("batchnorm_fold", floatMaker<BatchNormFold>());
  r.add("moving_average", floatMaker<MovingAverage>());
}

} // namespace dtnn::cuda
