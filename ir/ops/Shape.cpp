// Data movement that changes only shapes: flatten, reshape, concat and
// transpose.
#include "ir/OpTable.h"
#include "ir/ops/ShapeUtil.h"

namespace dtnn::ir {

namespace {

// Multiplies `a` by `b` into `a`; false on int64 overflow.
bool mulInto(int64_t &a, int64_t b) { return !__builtin_mul_overflow(a, b, &a); }

// An int list attribute as written in IR text, e.g. [-1,784].
std::string listStr(const std::vector<int64_t> &v) { return attrValueStr(AttrValue(v)); }

// Operand: x of rank >= 1. Dimensions before `axis` are kept and the rest are
// multiplied into one: flatten([?,16,5,5], axis=1) is [?,400].
bool inferFlatten(InferCtx &ctx) {
  const TensorType &x = ctx.operands[0];
  if (x.rank() == 0)
    return ctx.fail("flatten expects a tensor of rank 1 or more, got " + x.str(), {0});
  int64_t axisAttr = ctx.attrs.getInt("axis");
  auto axis = normalizeAxis(axisAttr, x.rank());
  if (!axis)
    return ctx.fail("flatten axis " + std::to_string(axisAttr) + " is out of range for " + x.str(),
                    {0});
  std::vector<int64_t> dims(x.dims.begin(), x.dims.begin() + *axis);
  int64_t rest = 1;
  for (size_t i = *axis; i < x.rank(); ++i) {
    if (x.dims[i] == kDynamic || rest == kDynamic) {
      rest = kDynamic;
    } else if (!mulInto(rest, x.dims[i])) {
      return ctx.fail("flatten of " + x.str() + " overflows the element count", {0});
    }
  }
  dims.push_back(rest);
  ctx.results = {TensorType(x.dtype, std::move(dims))};
  return true;
}

// Operand: x. `shape` lists the result dimensions; one entry may be -1, which
// is inferred from the element count. With one dynamic input dimension the -1
// becomes `?` when the static parts of both shapes have equal products.
bool inferReshape(InferCtx &ctx) {
  const TensorType &x = ctx.operands[0];
  std::vector<int64_t> shape = ctx.attrs.getInts("shape");
  int inferAt = -1;
  int64_t known = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (inferAt >= 0)
        return ctx.fail("reshape shape " + listStr(shape) + " has more than one -1");
      inferAt = static_cast<int>(i);
    } else if (shape[i] < 1) {
      return ctx.fail("reshape shape " + listStr(shape) +
                      " entries must be positive or -1 (inferred)");
    } else if (!mulInto(known, shape[i])) {
      return ctx.fail("reshape shape " + listStr(shape) + " overflows the element count");
    }
  }
  std::string what = "reshape of " + x.str() + " to " + listStr(shape);
  size_t dynamicDims = 0;
  for (int64_t d : x.dims) dynamicDims += d == kDynamic;
  int64_t inStatic = 1;
  for (int64_t d : x.dims)
    if (d != kDynamic && !mulInto(inStatic, d))
      return ctx.fail("reshape input " + x.str() + " overflows the element count", {0});
  if (dynamicDims == 0) {
    if (inferAt >= 0) {
      if (inStatic % known != 0)
        return ctx.fail(what + ": " + std::to_string(inStatic) +
                            " elements are not a multiple of " + std::to_string(known),
                        {0});
      shape[inferAt] = inStatic / known;
    } else if (inStatic != known) {
      return ctx.fail(what + " changes the element count from " + std::to_string(inStatic) +
                          " to " + std::to_string(known),
                      {0});
    }
  } else {
    if (dynamicDims > 1)
      return ctx.fail(what + ": an input with more than one dynamic dimension cannot be reshaped",
                      {0});
    if (inferAt < 0)
      return ctx.fail(what + ": the dynamic dimension needs a -1 in the target shape", {0});
    if (inStatic != known)
      return ctx.fail(what + ": the static parts do not match (" + std::to_string(inStatic) +
                          " vs " + std::to_string(known) + " elements)",
                      {0});
    shape[inferAt] = kDynamic;
  }
  ctx.results = {TensorType(x.dtype, std::move(shape))};
  return true;
}

// Operands: one or more tensors of the same dtype and rank whose dimensions
// agree except along `axis`, where they are summed.
bool inferConcat(InferCtx &ctx) {
  if (ctx.operands.empty()) return ctx.fail("concat needs at least one input");
  const TensorType &first = ctx.operands[0];
  if (first.rank() == 0)
    return ctx.fail("concat expects tensors of rank 1 or more, got " + first.str(), {0});
  int64_t axisAttr = ctx.attrs.getInt("axis");
  auto axis = normalizeAxis(axisAttr, first.rank());
  if (!axis)
    return ctx.fail(
        "concat axis " + std::to_string(axisAttr) + " is out of range for " + first.str(), {0});
  std::vector<int64_t> dims = first.dims;
  for (size_t i = 1; i < ctx.operands.size(); ++i) {
    const TensorType &t = ctx.operands[i];
    int idx = static_cast<int>(i);
    if (t.dtype != first.dtype || t.rank() != first.rank())
      return ctx.fail("concat input " + std::to_string(i) + " " + t.str() +
                          " does not match input 0 " + first.str(),
                      {0, idx});
    for (size_t d = 0; d < t.rank(); ++d) {
      if (static_cast<int64_t>(d) == *axis) continue;
      if (t.dims[d] != first.dims[d])
        return ctx.fail("concat input " + std::to_string(i) + " " + t.str() +
                            " differs from input 0 " + first.str() + " in dimension " +
                            std::to_string(d) + " (only axis " + std::to_string(*axis) +
                            " may differ)",
                        {0, idx});
    }
    int64_t &sum = dims[*axis];
    if (sum == kDynamic || t.dims[*axis] == kDynamic)
      sum = kDynamic;
    else if (__builtin_add_overflow(sum, t.dims[*axis], &sum))
      return ctx.fail("concat along axis " + std::to_string(*axis) + " overflows", {idx});
  }
  ctx.results = {TensorType(first.dtype, std::move(dims))};
  return true;
}

// Operand: x. Result dimension i is input dimension perm[i].
bool inferTranspose(InferCtx &ctx) {
  const TensorType &x = ctx.operands[0];
  const std::vector<int64_t> &perm = ctx.attrs.getInts("perm");
  if (perm.size() != x.rank())
    return ctx.fail("transpose perm " + listStr(perm) + " has " + std::to_string(perm.size()) +
                        " entries but the input " + x.str() + " has rank " +
                        std::to_string(x.rank()),
                    {0});
  std::vector<bool> seen(perm.size(), false);
  std::vector<int64_t> dims;
  for (int64_t p : perm) {
    if (p < 0 || p >= static_cast<int64_t>(perm.size()) || seen[p])
      return ctx.fail("transpose perm " + listStr(perm) + " is not a permutation of 0.." +
                      std::to_string(perm.size() - 1));
    seen[p] = true;
    dims.push_back(x.dims[p]);
  }
  ctx.results = {TensorType(x.dtype, std::move(dims))};
  return true;
}

} // namespace

void registerShapeOps(OpTable &t) {
  t.add({
      .name = "flatten",
      .summary = "Keeps the dimensions before axis and multiplies the rest into one.",
      .operands = {{"x"}},
      .attrs = {{"axis", AttrKind::Int, AttrValue(int64_t{1})}},
      .fusion = FusionClass::Opaque,
      .inferShape = inferFlatten,
      .macs = nullptr,
      .layer = std::nullopt,
  });
  t.add({
      .name = "reshape",
      .summary = "Reinterprets the elements with a new shape; one -1 entry is inferred.",
      .operands = {{"x"}},
      .attrs = {{"shape", AttrKind::Ints, std::nullopt}},
      .fusion = FusionClass::Opaque,
      .inferShape = inferReshape,
      .macs = nullptr,
      .layer = std::nullopt,
  });
  t.add({
      .name = "concat",
      .summary = "Joins one or more tensors along axis; other dimensions must agree.",
      .operands = {{"inputs", OperandSpec::Variadic}},
      .attrs = {{"axis", AttrKind::Int, AttrValue(int64_t{1})}},
      .fusion = FusionClass::Opaque,
      .inferShape = inferConcat,
      .macs = nullptr,
      .layer = std::nullopt,
  });
  t.add({
      .name = "transpose",
      .summary = "Permutes the dimensions: result dimension i is input dimension perm[i].",
      .operands = {{"x"}},
      .attrs = {{"perm", AttrKind::Ints, std::nullopt}},
      .fusion = FusionClass::Opaque,
      .inferShape = inferTranspose,
      .macs = nullptr,
      .layer = std::nullopt,
  });
}

} // namespace dtnn::ir
