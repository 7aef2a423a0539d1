// Label encodings: one_hot turns class labels into rows of a float matrix.
#include "ir/OpTable.h"
#include "ir/ops/ShapeUtil.h"

namespace dtnn::ir {

namespace {

// Operand: label i32[N]; result dtype[N, classes].
Error inferOneHot(InferCtx &ctx) {
  const TensorType &label = ctx.operands[0];
  if (label.rank() != 1 || label.dtype != DType::I32)
    return ctx.fail("one_hot expects i32 labels [N], got " + label.str(), {0});
  int64_t classes = ctx.attrs.getInt("classes");
  if (classes < 1) return ctx.fail("one_hot needs classes >= 1, got " + std::to_string(classes));
  std::optional<DType> t = parseDType(ctx.attrs.getString("dtype"));
  if (!t || !isFloatType(*t))
    return ctx.fail("one_hot dtype must be f32 or f64, got '" + ctx.attrs.getString("dtype") + "'");
  ctx.results = {TensorType(*t, {label.dims[0], classes})};
  return Error::success();
}

} // namespace

void registerEncodingOps(BuiltinOps &t) {
  t.add({
      .name = "one_hot",
      .summary = "Encodes i32 class labels [N] as rows [N,classes] with a 1 at the label and 0 "
                 "elsewhere (all 0 for labels out of range).",
      .operands = {{"label"}},
      .attrs = {{"classes", AttrKind::Int, std::nullopt},
                {"dtype", AttrKind::String, AttrValue(std::string("f32"))}},
      .fusion = FusionClass::Opaque,
      .inferShape = inferOneHot,
  });
}

} // namespace dtnn::ir
