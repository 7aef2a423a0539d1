// The activation `mish` (Misra, 2019; torch.nn.Mish): y = x * tanh(softplus(x)), where
// softplus(x) = log(1 + e^x), a smooth ReLU that lets a little of the negative side through.
//
// A plugin adds an activation in three parts, all here:
// - the op `mish`: its operands and shape rule (y has x's type), so that a model file calls it
//   like any activation, `x |> dense(120) |> mish`;
// - its gradient rule, which autodiff calls: dx = mish_backward(dy, x), a second op, internal
//   (no model calls it), with its own shape rule;
// - a kernel for each op and element type on the reference backend, which the planner picks
//   for these ops whatever backend runs the rest of the model.
#include "dtnn/Plugin.h"
#include "dtnn/Registry.h"

#include "ir/Builder.h"
#include "ir/OpDef.h"
#include "runtime/Kernel.h"
#include "runtime/KernelRegistry.h"

#include <cmath>

namespace {

using namespace dtnn;

// softplus(x) = log(1 + e^x), without overflow for large x.
template <typename T> T softplus(T x) { return x > T(20) ? x : std::log1p(std::exp(x)); }

template <typename T> T mish(T x) { return x * std::tanh(softplus(x)); }

// d mish / dx = tanh(sp) + x * sigmoid(x) * (1 - tanh(sp)^2), with sp = softplus(x).
template <typename T> T mishSlope(T x) {
  T t = std::tanh(softplus(x));
  T sigmoid = T(1) / (T(1) + std::exp(-x));
  return t + x * sigmoid * (T(1) - t * t);
}

bool isFloat(const ir::TensorType &t) {
  return t.dtype == ir::DType::F32 || t.dtype == ir::DType::F64;
}

// mish(x): y has x's type.
Error inferMish(ir::InferCtx &ctx) {
  const ir::TensorType &x = ctx.operands[0];
  if (!isFloat(x)) return ctx.fail("mish expects a floating-point input, got " + x.str(), {0});
  ctx.results = {x};
  return Error::success();
}

// mish_backward(dy, x): dx has x's type, which dy's must be.
Error inferMishBackward(ir::InferCtx &ctx) {
  const ir::TensorType &dy = ctx.operands[0], &x = ctx.operands[1];
  if (!isFloat(x)) return ctx.fail("mish_backward expects a floating-point x, got " + x.str(), {1});
  if (dy != x)
    return ctx.fail("mish_backward dy " + dy.str() + " does not match x " + x.str(), {0, 1});
  ctx.results = {x};
  return Error::success();
}

// The gradient rule: given dy, the gradient of the loss with respect to mish's result, the
// gradient with respect to x is mish_backward(dy, x), when one is wanted.
Error gradMish(ir::GradCtx &ctx) {
  if (!ctx.dy[0] || !ctx.needed[0]) return Error::success();
  ctx.dx[0] = ctx.b.create1("mish_backward", {ctx.dy[0], ctx.op.operand(0)});
  return ctx.dx[0] ? Error::success() : ctx.b.takeError();
}

// The kernels: forward y[i] = mish(x[i]); backward dx[i] = dy[i] * mish'(x[i]), over the
// whole buffers (the reference backend gives plain layouts).
class MishKernel : public runtime::Kernel {
public:
  MishKernel(const runtime::KernelRequest &r, bool backward) : Kernel(r), backward_(backward) {}
  Error run(const runtime::KernelArgs &a, runtime::ExecContext &) override {
    if (a.out[0].type.dtype == ir::DType::F64)
      compute<double>(a);
    else
      compute<float>(a);
    return Error::success();
  }

private:
  template <typename T> void compute(const runtime::KernelArgs &a) const {
    T *out = a.out[0].as<T>();
    const int64_t n = a.out[0].numel();
    // On the threads of the OpenMP runtime that dtnn's kernels use (its thread count is
    // dtnn-run's --threads); each element is computed alone, so the result does not depend on it.
    if (!backward_) {
      const T *x = a.in[0].as<T>();
#pragma omp parallel for schedule(static)
      for (int64_t i = 0; i < n; ++i) out[i] = mish(x[i]);
      return;
    }
    const T *dy = a.in[0].as<T>(), *x = a.in[1].as<T>();
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) out[i] = dy[i] * mishSlope(x[i]);
  }
  bool backward_;
};

// Registers op `name` and its kernels for f32 and f64.
Error registerOpWithKernels(ir::OpDef def, bool backward, const std::string &origin) {
  std::string name = def.name;
  if (Error e = ir::registerOp(std::move(def), origin)) return e;
  for (ir::DType t : {ir::DType::F32, ir::DType::F64}) {
    runtime::KernelEntry k;
    k.op = name;
    k.backend = "reference";
    k.dtype = t;
    k.make = [backward](const runtime::KernelRequest &r)
        -> Expected<std::unique_ptr<runtime::Kernel>> {
      return std::unique_ptr<runtime::Kernel>(new MishKernel(r, backward));
    };
    k.origin = origin;
    if (Error e = runtime::registerKernel(std::move(k))) return e;
  }
  return Error::success();
}

Error registerMish(const std::string &origin) {
  ir::OpDef forward;
  forward.name = "mish";
  forward.summary = "The Mish activation, x * tanh(softplus(x)), as torch.nn.Mish.";
  forward.operands = {{"x"}};
  forward.fusion = ir::FusionClass::Opaque;
  forward.inferShape = inferMish;
  forward.grad = gradMish;
  // Its kernels are float32's: under --precision bf16 the mixed-precision pass casts a bf16
  // input up to float32 before it.
  forward.precision = ir::Precision::Float;
  if (Error e = registerOpWithKernels(std::move(forward), false, origin)) return e;
  ir::OpDef backward;
  backward.name = "mish_backward";
  backward.summary = "The gradient of mish: dy * mish'(x).";
  backward.operands = {{"dy"}, {"x"}};
  backward.fusion = ir::FusionClass::Opaque;
  backward.inferShape = inferMishBackward;
  backward.role = ir::OpRole::Backward;
  backward.internal = true;
  backward.precision = ir::Precision::Float;
  return registerOpWithKernels(std::move(backward), true, origin);
}

} // namespace

DTNN_PLUGIN("mish", registerMish)
