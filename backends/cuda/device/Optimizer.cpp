// The optimizer updates (sgd, adam, adamw, rmsprop, nadam) and the coefficients of their fused
// forms on the device: the attributes are rounded here as the reference rounds them, the
// learning rate and the step count are read on the device (kernels/Optimizer.h).
#include "backends/cuda/device/Device.h"
#include "backends/cuda/device/kernels/Optimizer.h"

#include <iterator>

namespace dtnn::cuda {

namespace {

LrRef lrOf(const runtime::TensorView &v) { return {v.data, v.type.dtype == ir::DType::F64}; }

const int64_t *stepOf(const runtime::TensorView &v) { return static_cast<const int64_t *>(v.data); }

// sgd_update %p, %g, %lr [, %step, %momentum_buf].
template <typename T> class SgdUpdate final : public DeviceOp {
public:
  explicit SgdUpdate(const DeviceKernelSpec &s) {
    const ir::AttrMap &at = s.op->attrs();
    params_ = {static_cast<T>(at.getFloat("momentum")), static_cast<T>(1 - at.getFloat("dampening")),
               static_cast<T>(at.getFloat("weight_decay")), at.getBool("nesterov")};
  }
  Error launch(const runtime::KernelArgs &a, const Launch &l) override {
    bool momentum = params_.momentum != T(0);
    const int64_t *step = momentum ? stepOf(a.in[3]) : nullptr;
    T *buf = momentum ? a.in[4].as<T>() : nullptr;
    return check(launchSgdUpdate<T>(a.in[0].as<T>(), a.in[1].as<T>(), lrOf(a.in[2]), step, buf,
                                    a.in[0].numel(), params_, l.stream),
                 "sgd_update");
  }

private:
  SgdParams<T> params_;
};

// adam_update and adamw_update %p, %g, %lr, %step, %m, %v [, %max_v].
template <typename T> class AdamUpdate final : public DeviceOp {
public:
  AdamUpdate(const DeviceKernelSpec &s, bool decoupled) {
    const ir::AttrMap &at = s.op->attrs();
    double beta1 = at.getFloat("beta1"), beta2 = at.getFloat("beta2");
    double wd = at.getFloat("weight_decay");
    params_ = {static_cast<T>(beta1),
               static_cast<T>(1 - beta1),
               static_cast<T>(beta2),
               static_cast<T>(1 - beta2),
               static_cast<T>(at.getFloat("eps")),
               static_cast<T>(decoupled ? 0 : wd),
               beta1,
               beta2,
               wd,
               decoupled,
               at.getBool("amsgrad")};
  }
  Error launch(const runtime::KernelArgs &a, const Launch &l) override {
    T *maxV = params_.amsgrad ? a.in[6].as<T>() : nullptr;
    return check(launchAdamUpdate<T>(a.in[0].as<T>(), a.in[1].as<T>(), lrOf(a.in[2]), stepOf(a.in[3]),
                                     a.in[4].as<T>(), a.in[5].as<T>(), maxV, a.in[0].numel(),
                                     params_, l.stream),
                 params_.decoupled ? "adamw_update" : "adam_update");
  }

private:
  AdamParams<T> params_;
};

// rmsprop_update %p, %g, %lr, %square_avg [, %momentum_buf] [, %grad_avg].
template <typename T> class RmspropUpdate final : public DeviceOp {
public:
  explicit RmspropUpdate(const DeviceKernelSpec &s) {
    const ir::AttrMap &at = s.op->attrs();
    double alpha = at.getFloat("alpha");
    params_ = {static_cast<T>(alpha), static_cast<T>(1 - alpha), static_cast<T>(at.getFloat("eps")),
               static_cast<T>(at.getFloat("weight_decay")), static_cast<T>(at.getFloat("momentum"))};
    momentum_ = at.getFloat("momentum") != 0;
    centered_ = at.getBool("centered");
  }
  Error launch(const runtime::KernelArgs &a, const Launch &l) override {
    size_t next = 4;
    T *buf = momentum_ ? a.in[next++].as<T>() : nullptr;
    T *gradAvg = centered_ ? a.in[next].as<T>() : nullptr;
    return check(launchRmspropUpdate<T>(a.in[0].as<T>(), a.in[1].as<T>(), lrOf(a.in[2]),
                                        a.in[3].as<T>(), buf, gradAvg, a.in[0].numel(), params_,
                                        l.stream),
                 "rmsprop_update");
  }

private:
  RmspropParams<T> params_;
  bool momentum_ = false, centered_ = false;
};

// nadam_update %p, %g, %lr, %step, %m, %v, %mu_product; the step's scalars in the workspace.
template <typename T> class NadamUpdate final : public DeviceOp {
public:
  explicit NadamUpdate(const DeviceKernelSpec &s) {
    const ir::AttrMap &at = s.op->attrs();
    double beta1 = at.getFloat("beta1"), beta2 = at.getFloat("beta2");
    params_ = {static_cast<T>(beta1),
               static_cast<T>(1 - beta1),
               static_cast<T>(beta2),
               static_cast<T>(1 - beta2),
               static_cast<T>(at.getFloat("eps")),
               static_cast<T>(at.getFloat("weight_decay")),
               beta1,
               beta2,
               at.getFloat("momentum_decay")};
  }
  Error launch(const runtime::KernelArgs &a, const Launch &l) override {
    return check(launchNadamUpdate<T>(a.in[0].as<T>(), a.in[1].as<T>(), lrOf(a.in[2]),
                                      stepOf(a.in[3]), a.in[4].as<T>(), a.in[5].as<T>(),
                                      a.in[6].as<T>(), a.workspace, a.in[0].numel(), params_,
                                      l.stream),
                 "nadam_update");
  }

private:
  NadamParams<T> params_;
};

// The results of a coefficients op as device pointers.
template <typename T> CoefficientOuts<T> outsOf(const runtime::KernelArgs &a) {
  CoefficientOuts<T> outs{};
  for (size_t i = 0; i < a.out.size() && i < std::size(outs.out); ++i) outs.out[i] = a.out[i].as<T>();
  return outs;
}

// sgd_coefficients %lr, %step.
template <typename T> class SgdCoefficients final : public DeviceOp {
public:
  explicit SgdCoefficients(const DeviceKernelSpec &s)
      : momentum_(s.op->attrs().getFloat("momentum")), keep_(1 - s.op->attrs().getFloat("dampening")),
        weightDecay_(s.op->attrs().getFloat("weight_decay")) {}
  Error launch(const runtime::KernelArgs &a, const Launch &l) override {
    return check(launchSgdCoefficients<T>(a.in[0].as<T>(), stepOf(a.in[1]), momentum_, keep_,
                                          weightDecay_, outsOf<T>(a), l.stream),
                 "sgd_coefficients");
  }

private:
  double momentum_, keep_, weightDecay_;
};

// adam_coefficients and adamw_coefficients %lr, %step.
template <typename T> class AdamCoefficients final : public DeviceOp {
public:
  AdamCoefficients(const DeviceKernelSpec &s, bool decoupled)
      : beta1_(s.op->attrs().getFloat("beta1")), beta2_(s.op->attrs().getFloat("beta2")),
        eps_(s.op->attrs().getFloat("eps")), weightDecay_(s.op->attrs().getFloat("weight_decay")),
        decoupled_(decoupled) {}
  Error launch(const runtime::KernelArgs &a, const Launch &l) override {
    return check(launchAdamCoefficients<T>(a.in[0].as<T>(), stepOf(a.in[1]), beta1_, beta2_, eps_,
                                           weightDecay_, decoupled_, outsOf<T>(a), l.stream),
                 decoupled_ ? "adamw_coefficients" : "adam_coefficients");
  }

private:
  double beta1_, beta2_, eps_, weightDecay_;
  bool decoupled_;
};

// A maker of kernel template K at the float type of the spec's operand 0, with extra arguments.
template <template <typename> class K, typename... A> DeviceKernelMaker floatMaker(A... extra) {
  return [=](const DeviceKernelSpec &s) -> Expected<std::unique_ptr<DeviceKernel>> {
    if (!s.op || s.in.empty()) return Error::make("an optimizer kernel without its op");
    switch (s.in[0].type.dtype) {
    case ir::DType::F32: return make<K<float>>(s, extra...);
    case ir::DType::F64: return make<K<double>>(s, extra...);
    default:
      return Error::make("'" + s.kind + "' on the cuda backend takes f32 or f64, not " +
                         s.in[0].str());
    }
  };
}

} // namespace

void registerOptimizerKernels(DeviceRegistry &r) {
  r.add("sgd_update", floatMaker<SgdUpdate>());
  r.add("adam_update", floatMaker<AdamUpdate>(false));
  r.add("adamw_update", floatMaker<AdamUpdate>(true));
  r.add("rmsprop_update", floatMaker<RmspropUpdate>());
  r.add("nadam_update", floatMaker<NadamUpdate>());
  r.add("sgd_coefficients", floatMaker<SgdCoefficients>());
  r.add("adam_coefficients", floatMaker<AdamCoefficients>(false));
  r.add("adamw_coefficients", floatMaker<AdamCoefficients>(true));
}

} // namespace dtnn::cuda
