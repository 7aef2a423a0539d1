// The optimizer `signsgd`: param -= lr * sign(grad + weight_decay * param).
// Its update op `signsgd_update` takes param (updated in place), grad and lr;
// its attribute weight_decay is the optimizer's one hyperparameter besides lr.
#include "dtnn/Plugin.h"
#include "dtnn/Registry.h"

#include "ir/OpDef.h"
#include "passes/Optimizers.h"
#include "runtime/Kernel.h"
#include "runtime/KernelRegistry.h"

#include <cmath>

namespace {

using namespace dtnn;

Error inferUpdate(ir::InferCtx &ctx) {
  const auto &ops = ctx.operands;
  double decay = ctx.attrs.getFloat("weight_decay");
  if (!(decay >= 0 && std::isfinite(decay)))
    return ctx.fail("signsgd_update weight_decay must be finite and at least 0, got " +
                    ir::formatDouble(decay));
  if (ops[0].dtype != ir::DType::F32)
    return ctx.fail("signsgd_update expects an f32 param, got " + ops[0].str(), {0});
  if (ops[1] != ops[0])
    return ctx.fail("signsgd_update grad " + ops[1].str() + " does not match param " +
                        ops[0].str(),
                    {0, 1});
  if (ops[2].rank() != 0 || ops[2].dtype != ir::DType::F32)
    return ctx.fail("signsgd_update lr must be a scalar f32[], got " + ops[2].str(), {2});
  ctx.results = {};
  return Error::success();
}

// Registered for any one layout (LayoutKind::Same): param and grad arrive in
// the layout the parameter has on the run's backend, and the update runs over
// their whole buffers, padding included, which is elementwise all the same.
class UpdateKernel : public runtime::Kernel {
public:
  explicit UpdateKernel(const runtime::KernelRequest &r) : Kernel(r) {
    in_[0] = in_[1] = r.in[0];
    n_ = static_cast<int64_t>(r.in[0].bytes / sizeof(float));
  }
  Error run(const runtime::KernelArgs &a, runtime::ExecContext &) override {
    float *p = a.out[0].as<float>();
    const float *g = a.in[1].as<float>();
    float lr = *a.in[2].as<float>();
    float decay = static_cast<float>(a.op->attrs().getFloat("weight_decay"));
    for (int64_t i = 0; i < n_; ++i) {
      float d = g[i] + decay * p[i];
      p[i] -= lr * static_cast<float>((d > 0) - (d < 0));
    }
    return Error::success();
  }

private:
  int64_t n_;
};

Error registerSignSgd(const std::string &origin) {
  ir::OpDef def;
  def.name = "signsgd_update";
  def.summary = "A signSGD step (an extension).";
  def.operands = {{"param", ir::OperandSpec::Required, ir::Effect::Write}, {"grad"}, {"lr"}};
  def.attrs = {{"weight_decay", ir::AttrKind::Float, ir::AttrValue(0.0)}};
  def.numResults = 0;
  def.inferShape = inferUpdate;
  def.role = ir::OpRole::Update;
  def.internal = true;
  def.precision = ir::Precision::Float; // updates the float32 master weights
  if (Error e = ir::registerOp(std::move(def), origin)) return e;
  runtime::KernelEntry k;
  k.op = "signsgd_update";
  k.backend = "reference";
  k.dtype = ir::DType::F32;
  k.layouts = runtime::LayoutKind::Same;
  k.make = [](const runtime::KernelRequest &r) -> Expected<std::unique_ptr<runtime::Kernel>> {
    return std::unique_ptr<runtime::Kernel>(new UpdateKernel(r));
  };
  k.origin = origin;
  if (Error e = runtime::registerKernel(std::move(k))) return e;
  passes::OptimizerDef opt;
  opt.name = "signsgd";
  opt.summary = "step each parameter by lr against the sign of its gradient";
  return passes::registerOptimizer(std::move(opt), origin);
}

} // namespace

DTNN_PLUGIN("signsgd", registerSignSgd)
