// Fully connected layer: dense, y = x * weight^T + bias over [N,K] inputs.
#include "ir/OpTable.h"
#include "ir/ops/ShapeUtil.h"

namespace dtnn::ir {

namespace {

// The message for a non-matrix input, shared by the shape rule and the layer.
std::string denseRankMessage(const TensorType &x) {
  return "dense expects a 2-d input [N,K], got " + x.str() + "; insert `flatten` before it";
}

// Operands: x [N,K], weight [M,K], optional bias [M].
bool inferDense(InferCtx &ctx) {
  const TensorType &x = ctx.operands[0];
  const TensorType &w = ctx.operands[1];
  if (x.rank() != 2) return ctx.fail(denseRankMessage(x), {0});
  if (w.rank() != 2) return ctx.fail("dense weight must be 2-d [M,K], got " + w.str(), {1});
  if (w.dtype != x.dtype)
    return ctx.fail(
        "dense weight " + w.str() + " does not match the element type of input " + x.str(), {0, 1});
  int64_t k = x.dims[1], m = w.dims[0];
  if (k != kDynamic && k != w.dims[1])
    return ctx.fail("dense weight " + w.str() + " does not match input " + x.str() +
                        " (inner dimensions differ)",
                    {0, 1});
  if (ctx.operands.size() > 2) {
    const TensorType &b = ctx.operands[2];
    if (b.rank() != 1 || b.dims[0] != m || b.dtype != x.dtype)
      return ctx.fail("dense bias must be " + TensorType(x.dtype, {m}).str() + ", got " + b.str(),
                      {2});
  }
  ctx.results = {TensorType(x.dtype, {x.dims[0], m})};
  return true;
}

// One multiply-accumulate per weight element and sample.
int64_t denseMacs(const std::vector<TensorType> &operands, const std::vector<TensorType> &,
                  const AttrMap &) {
  return operands[1].staticElements();
}

// dense(units, bias=true, init="he_uniform")
bool buildDense(LayerCtx &ctx) {
  const TensorType &x = ctx.inputs[0];
  if (x.rank() != 2) return ctx.fail(denseRankMessage(x));
  int64_t units = ctx.args.getInt("units");
  if (units < 1) return ctx.fail("dense units must be positive", "units");
  int64_t k = x.dims[1];
  if (k == kDynamic) return ctx.fail("dense needs a static feature dimension, got " + x.str());
  ctx.params.push_back(
      {"weight", TensorType(x.dtype, {units, k}), ctx.args.getString("init"), true});
  if (ctx.args.getBool("bias"))
    ctx.params.push_back({"bias", TensorType(x.dtype, {units}), "zeros", true});
  return true;
}

} // namespace

void registerDenseOps(OpTable &t) {
  t.add({
      .name = "dense",
      .summary = "Fully connected layer mapping [N,K] to [N,M] with an [M,K] weight.",
      .operands = {{"x"}, {"weight"}, {"bias", OperandSpec::Optional}},
      .attrs = {},
      .fusion = FusionClass::Opaque,
      .inferShape = inferDense,
      .macs = denseMacs,
      .layer = LayerSpec{1,
                         {{"units", AttrKind::Int, std::nullopt},
                          {"bias", AttrKind::Bool, AttrValue(true)},
                          {"init", AttrKind::String, AttrValue(std::string("he_uniform"))}},
                         buildDense},
  });
}

} // namespace dtnn::ir
