// The op `square`: y = x * x, elementwise on a floating-point tensor.
// Shape rule: y has x's type. Gradient rule: dx = dy * x + dy * x, built
// from the built-in ops mul and add. Kernel: a loop on the reference backend.
#include "Extensions.h"

#include "dtnn/Registry.h"

#include "ir/Builder.h"
#include "ir/OpDef.h"
#include "runtime/Kernel.h"
#include "runtime/KernelRegistry.h"

namespace ext {

namespace {

using namespace dtnn;

Error inferSquare(ir::InferCtx &ctx) {
  const ir::TensorType &x = ctx.operands[0];
  if (x.dtype != ir::DType::F32 && x.dtype != ir::DType::F64)
    return ctx.fail("square expects a floating-point input, got " + x.str(), {0});
  ctx.results = {x};
  return Error::success();
}

Error gradSquare(ir::GradCtx &ctx) {
  if (!ctx.dy[0] || !ctx.needed[0]) return Error::success();
  ir::Value *half = ctx.b.create1("mul", {ctx.dy[0], ctx.op.operand(0)});
  ctx.dx[0] = half ? ctx.b.create1("add", {half, half}) : nullptr;
  if (!ctx.dx[0]) return ctx.b.takeError();
  return Error::success();
}

template <typename T> void square(const runtime::KernelArgs &a) {
  const T *x = a.in[0].as<T>();
  T *y = a.out[0].as<T>();
  for (int64_t i = 0, n = a.out[0].numel(); i < n; ++i) y[i] = x[i] * x[i];
}

class SquareKernel : public runtime::Kernel {
public:
  explicit SquareKernel(const runtime::KernelRequest &r) : Kernel(r) {}
  Error run(const runtime::KernelArgs &a, runtime::ExecContext &) override {
    if (a.in[0].type.dtype == ir::DType::F64) square<double>(a);
    else square<float>(a);
    return Error::success();
  }
};

} // namespace

Error registerSquare() {
  ir::OpDef def;
  def.name = "square";
  def.summary = "The elementwise square of x (an extension).";
  def.operands = {{"x"}};
  def.fusion = ir::FusionClass::Opaque;
  def.inferShape = inferSquare;
  def.grad = gradSquare;
  if (Error e = ir::registerOp(std::move(def), kOrigin)) return e;
  for (ir::DType t : {ir::DType::F32, ir::DType::F64}) {
    runtime::KernelEntry k;
    k.op = "square";
    k.backend = "reference";
    k.dtype = t;
    k.make = [](const runtime::KernelRequest &r) -> Expected<std::unique_ptr<runtime::Kernel>> {
      return std::unique_ptr<runtime::Kernel>(new SquareKernel(r));
    };
    k.origin = kOrigin;
    if (Error e = runtime::registerKernel(std::move(k))) return e;
  }
  return Error::success();
}

} // namespace ext
