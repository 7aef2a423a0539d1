// Binary arithmetic with numpy broadcasting: add, sub, mul and div. A `?`
// dimension broadcasts against `?` or 1 only.
#include "ir/OpTable.h"
#include "ir/ops/ShapeUtil.h"

namespace dtnn::ir {

namespace {

// The shape rule shared by the binary ops; `op` names the op in messages.
// Operands: a and b of one dtype with broadcast-compatible shapes.
ShapeFn broadcastBinary(std::string op) {
  return [op = std::move(op)](InferCtx &ctx) {
    const TensorType &a = ctx.operands[0];
    const TensorType &b = ctx.operands[1];
    if (a.dtype != b.dtype)
      return ctx.fail(op + " operands must have the same element type, got " + a.str() + " and " +
                          b.str(),
                      {0, 1});
    auto dims = broadcastDims(a.dims, b.dims);
    if (!dims) return ctx.fail(op + " cannot broadcast " + a.str() + " with " + b.str(), {0, 1});
    ctx.results = {TensorType(a.dtype, std::move(*dims))};
    return true;
  };
}

} // namespace

void registerElementwiseOps(OpTable &t) {
  t.add({
      .name = "add",
      .summary = "Elementwise sum a + b with numpy broadcasting.",
      .operands = {{"a"}, {"b"}},
      .attrs = {},
      .fusion = FusionClass::Broadcast,
      .inferShape = broadcastBinary("add"),
      .macs = nullptr,
      .layer = std::nullopt,
  });
  t.add({
      .name = "sub",
      .summary = "Elementwise difference a - b with numpy broadcasting.",
      .operands = {{"a"}, {"b"}},
      .attrs = {},
      .fusion = FusionClass::Broadcast,
      .inferShape = broadcastBinary("sub"),
      .macs = nullptr,
      .layer = std::nullopt,
  });
  t.add({
      .name = "mul",
      .summary = "Elementwise product a * b with numpy broadcasting.",
      .operands = {{"a"}, {"b"}},
      .attrs = {},
      .fusion = FusionClass::Broadcast,
      .inferShape = broadcastBinary("mul"),
      .macs = nullptr,
      .layer = std::nullopt,
  });
  t.add({
      .name = "div",
      .summary = "Elementwise quotient a / b with numpy broadcasting.",
      .operands = {{"a"}, {"b"}},
      .attrs = {},
      .fusion = FusionClass::Broadcast,
      .inferShape = broadcastBinary("div"),
      .macs = nullptr,
      .layer = std::nullopt,
  });
}

} // namespace dtnn::ir
