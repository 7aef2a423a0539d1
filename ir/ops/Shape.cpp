// Data movement that changes only shapes: flatten, reshape, concat,
// transpose, and the helpers their gradients use: reshape_like, slice and
// slice_backward.
#include "ir/Builder.h"
#include "ir/OpTable.h"
#include "ir/ops/ShapeUtil.h"

namespace dtnn::ir {

namespace {

// Multiplies `a` by `b` into `a`; false on int64 overflow.
bool mulInto(int64_t &a, int64_t b) { return !__builtin_mul_overflow(a, b, &a); }

// An int list attribute as written in IR text, e.g. [-1,784].
std::string listStr(const std::vector<int64_t> &v) { return attrValueStr(AttrValue(v)); }

// Counts the batch dimensions (`?`, `?*k`) of dims[begin, end) and multiplies
// their sizes per sample (k for `?*k`) into `product`; false on overflow.
bool perSample(const std::vector<int64_t> &dims, size_t begin, size_t end, size_t &batchDims,
               int64_t &product) {
  batchDims = 0;
  product = 1;
  for (size_t i = begin; i < end; ++i) {
    batchDims += isBatchDim(dims[i]);
    if (!mulInto(product, batchMultiple(dims[i]))) return false;
  }
  return true;
}

// Operand: x of rank >= 1. Dimensions `axis` to `end_axis` (torch.flatten's
// start_dim and end_dim) are multiplied into one and the others kept:
// flatten([?,16,5,5], axis=1) is [?,400], and flatten([?,197,768], axis=0,
// end_axis=1) merges the batch axis with the next: [?*197,768].
Error inferFlatten(InferCtx &ctx) {
  const TensorType &x = ctx.operands[0];
  if (x.rank() == 0)
    return ctx.fail("flatten expects a tensor of rank 1 or more, got " + x.str(), {0});
  int64_t axisAttr = ctx.attrs.getInt("axis");
  auto axis = normalizeAxis(axisAttr, x.rank());
  if (!axis)
    return ctx.fail("flatten axis " + std::to_string(axisAttr) + " is out of range for " + x.str(),
                    {0});
  int64_t endAttr = ctx.attrs.getInt("end_axis");
  auto end = normalizeAxis(endAttr, x.rank());
  if (!end || *end < *axis)
    return ctx.fail("flatten end_axis " + std::to_string(endAttr) + " is out of range for " +
                        x.str() + " or before axis " + std::to_string(axisAttr),
                    {0});
  std::vector<int64_t> dims(x.dims.begin(), x.dims.begin() + *axis);
  size_t batchDims;
  int64_t merged;
  if (!perSample(x.dims, *axis, *end + 1, batchDims, merged))
    return ctx.fail("flatten of " + x.str() + " overflows the element count", {0});
  if (batchDims > 1)
    return ctx.fail("flatten of " + x.str() + " would merge two multiples of the batch size", {0});
  dims.push_back(batchDims ? batchDim(merged) : merged);
  dims.insert(dims.end(), x.dims.begin() + *end + 1, x.dims.end());
  ctx.results = {TensorType(x.dtype, std::move(dims))};
  return Error::success();
}

// Operand: x. `shape` lists the result dimensions; one entry may be -1, which
// is inferred from the element count. An input with a batch dimension holds S
// elements per sample (S counts `?*k` as k); the -1 then becomes `?*(S/K)`,
// where K is the product of the other entries, and must divide S: [?,197,768]
// to [-1,768] is [?*197,768], and [?*197,768] to [-1,197,768] is [?,197,768].
Error inferReshape(InferCtx &ctx) {
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
  size_t batchDims;
  int64_t inStatic;
  if (!perSample(x.dims, 0, x.rank(), batchDims, inStatic))
    return ctx.fail("reshape input " + x.str() + " overflows the element count", {0});
  if (batchDims == 0) {
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
    if (batchDims > 1)
      return ctx.fail(what + ": an input with more than one batch dimension cannot be reshaped",
                      {0});
    if (inferAt < 0)
      return ctx.fail(what + ": the batch dimension needs a -1 in the target shape", {0});
    if (inStatic % known != 0)
      return ctx.fail(what + ": the other entries hold " + std::to_string(known) +
                          " elements, which do not divide the " + std::to_string(inStatic) +
                          " of each sample (the -1 would split the batch axis)",
                      {0});
    shape[inferAt] = batchDim(inStatic / known);
  }
  ctx.results = {TensorType(x.dtype, std::move(shape))};
  return Error::success();
}

// Operands: one or more tensors of the same dtype and rank whose dimensions
// agree except along `axis`, where they are summed.
Error inferConcat(InferCtx &ctx) {
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
    // Sizes add; along the batch axis multiples of the batch size add: [?,3] and
    // [?,3] make [?*2,3].
    int64_t &sum = dims[*axis], size = t.dims[*axis];
    if (isBatchDim(sum) != isBatchDim(size))
      return ctx.fail("concat along axis " + std::to_string(*axis) + " joins " + dimStr(sum) +
                          " with " + dimStr(size) +
                          ": a multiple of the batch size and a fixed size",
                      {0, idx});
    int64_t total;
    if (__builtin_add_overflow(batchMultiple(sum), batchMultiple(size), &total) ||
        total > kMaxDim)
      return ctx.fail("concat along axis " + std::to_string(*axis) + " overflows", {idx});
    sum = isBatchDim(sum) ? batchDim(total) : total;
  }
  ctx.results = {TensorType(first.dtype, std::move(dims))};
  return Error::success();
}

// Operand: x. Result dimension i is input dimension perm[i].
Error inferTranspose(InferCtx &ctx) {
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
  return Error::success();
}

// Operands: x and the shape donor like. The result has x's dtype and like's
// dimensions; the element counts must agree (with one `?` on each side, the
// static parts must).
Error inferReshapeLike(InferCtx &ctx) {
  const TensorType &x = ctx.operands[0];
  const TensorType &like = ctx.operands[1];
  size_t xDyn, likeDyn;
  int64_t xCount, likeCount;
  std::string what = "reshape_like of " + x.str() + " to the shape of " + like.str();
  if (!perSample(x.dims, 0, x.rank(), xDyn, xCount) ||
      !perSample(like.dims, 0, like.rank(), likeDyn, likeCount))
    return ctx.fail(what + " overflows the element count", {0, 1});
  if (xDyn != likeDyn || xDyn > 1 || xCount != likeCount)
    return ctx.fail(what + " changes the element count", {0, 1});
  ctx.results = {TensorType(x.dtype, like.dims)};
  return Error::success();
}

// The type of slice(x) {axis, begin, end}: 0 <= begin < end <= dim along a
// static axis. `op` names the op in messages.
Error slicedType(InferCtx &ctx, const TensorType &x, const std::string &op, TensorType &out) {
  if (x.rank() == 0) return ctx.fail(op + " expects a tensor of rank 1 or more, got " + x.str());
  int64_t axisAttr = ctx.attrs.getInt("axis");
  auto axis = normalizeAxis(axisAttr, x.rank());
  if (!axis)
    return ctx.fail(op + " axis " + std::to_string(axisAttr) + " is out of range for " + x.str());
  int64_t dim = x.dims[*axis];
  if (isBatchDim(dim))
    return ctx.fail(op + " along the batch dimension " + std::to_string(*axis) + " of " +
                    x.str() + " is not supported");
  int64_t begin = ctx.attrs.getInt("begin"), end = ctx.attrs.getInt("end");
  if (begin < 0 || begin >= end || end > dim)
    return ctx.fail(op + " range [" + std::to_string(begin) + ", " + std::to_string(end) +
                    ") is not a non-empty range inside dimension " + std::to_string(*axis) +
                    " of " + x.str());
  out = x;
  out.dims[*axis] = end - begin;
  return Error::success();
}

// Operand: x. The result keeps elements [begin, end) along axis.
Error inferSlice(InferCtx &ctx) {
  TensorType out;
  if (Error e = slicedType(ctx, ctx.operands[0], "slice", out)) {
    ctx.blame = {0};
    return e;
  }
  ctx.results = {std::move(out)};
  return Error::success();
}

// Operands: dy, the gradient of slice(x), and the shape donor x. The result
// has x's type: zeros with dy placed at [begin, end) along axis.
Error inferSliceBackward(InferCtx &ctx) {
  const TensorType &dy = ctx.operands[0];
  const TensorType &x = ctx.operands[1];
  TensorType sliced;
  if (Error e = slicedType(ctx, x, "slice_backward", sliced)) {
    ctx.blame = {1};
    return e;
  }
  if (dy != sliced)
    return ctx.fail("slice_backward gradient " + dy.str() + " does not match the slice type " +
                        sliced.str(),
                    {0, 1});
  ctx.results = {x};
  return Error::success();
}

// Fails the rule with the builder's error when v is null.
Error check(GradCtx &ctx, Value *v) { return v ? Error::success() : ctx.b.takeError(); }

// Gradient of ops that only reinterpret the shape: dy reshaped like x.
Error reshapeGrad(GradCtx &ctx) {
  if (!ctx.dy[0] || !ctx.needed[0]) return Error::success();
  return check(ctx, ctx.dx[0] = ctx.b.create1("reshape_like", {ctx.dy[0], ctx.op.operand(0)}));
}

// Gradient of transpose: dy transposed by the inverse permutation.
Error transposeGrad(GradCtx &ctx) {
  if (!ctx.dy[0] || !ctx.needed[0]) return Error::success();
  const std::vector<int64_t> &perm = ctx.op.attrs().getInts("perm");
  std::vector<int64_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inverse[perm[i]] = static_cast<int64_t>(i);
  ctx.dx[0] = ctx.b.create1("transpose", {ctx.dy[0]}, attrs({{"perm", inverse}}));
  return check(ctx, ctx.dx[0]);
}

// Gradient of concat: the slice of dy that each input occupies.
Error concatGrad(GradCtx &ctx) {
  if (!ctx.dy[0]) return Error::success();
  const TensorType &outType = ctx.op.result(0)->type();
  int64_t axis = *normalizeAxis(ctx.op.attrs().getInt("axis"), outType.rank());
  int64_t offset = 0;
  for (size_t i = 0; i < ctx.op.operands().size(); ++i) {
    int64_t size = ctx.op.operand(i)->type().dims[axis];
    if (isBatchDim(size))
      return ctx.fail("the gradient of concat along the batch dimension " + std::to_string(axis) +
                      " is not supported");
    if (ctx.needed[i]) {
      ctx.dx[i] = ctx.b.create1("slice", {ctx.dy[0]},
                                attrs({{"axis", axis}, {"begin", offset}, {"end", offset + size}}));
      if (Error e = check(ctx, ctx.dx[i])) return e;
    }
    offset += size;
  }
  return Error::success();
}

// Gradient of slice: dy placed back into zeros of x's type.
Error sliceGrad(GradCtx &ctx) {
  if (!ctx.dy[0] || !ctx.needed[0]) return Error::success();
  ctx.dx[0] = ctx.b.create1("slice_backward", {ctx.dy[0], ctx.op.operand(0)}, ctx.op.attrs());
  return check(ctx, ctx.dx[0]);
}

} // namespace

void registerShapeOps(BuiltinOps &t) {
  t.add({
      .name = "flatten",
      .summary = "Multiplies the dimensions from axis to end_axis into one (torch.flatten).",
      .operands = {reusable("x")},
      .attrs = {{"axis", AttrKind::Int, AttrValue(int64_t{1})},
                {"end_axis", AttrKind::Int, AttrValue(int64_t{-1})}},
      .fusion = FusionClass::Opaque,
      .inferShape = inferFlatten,
      .macs = nullptr,
      .layer = std::nullopt,
      .grad = reshapeGrad,
      .trainForm = "",
      .precision = Precision::Follow,
  });
  t.add({
      .name = "reshape",
      .summary = "Reinterprets the elements with a new shape; one -1 entry is inferred.",
      .operands = {reusable("x")},
      .attrs = {{"shape", AttrKind::Ints, std::nullopt}},
      .fusion = FusionClass::Opaque,
      .inferShape = inferReshape,
      .macs = nullptr,
      .layer = std::nullopt,
      .grad = reshapeGrad,
      .trainForm = "",
      .precision = Precision::Follow,
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
      .grad = concatGrad,
      .trainForm = "",
      .precision = Precision::Follow,
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
      .grad = transposeGrad,
      .trainForm = "",
      .precision = Precision::Follow,
  });
  t.add({
      .name = "reshape_like",
      .summary = "Reinterprets the elements of x with the dimensions of like.",
      .operands = {reusable("x"), shapeOnly("like")},
      .attrs = {},
      .fusion = FusionClass::Opaque,
      .inferShape = inferReshapeLike,
      .macs = nullptr,
      .layer = std::nullopt,
      .grad = reshapeGrad,
      .trainForm = "",
      .role = OpRole::Backward,
      .internal = true,
      .precision = Precision::Follow,
  });
  t.add({
      .name = "slice",
      .summary = "Keeps the elements [begin, end) of x along a static axis.",
      .operands = {{"x"}},
      .attrs = {{"axis", AttrKind::Int, std::nullopt},
                {"begin", AttrKind::Int, std::nullopt},
                {"end", AttrKind::Int, std::nullopt}},
      .fusion = FusionClass::Opaque,
      .inferShape = inferSlice,
      .macs = nullptr,
      .layer = std::nullopt,
      .grad = sliceGrad,
      .trainForm = "",
      .precision = Precision::Follow,
  });
  t.add({
      .name = "slice_backward",
      .summary = "Gradient of slice: zeros of x's type with dy at [begin, end) along axis.",
      .operands = {{"dy"}, shapeOnly("x")},
      .attrs = {{"axis", AttrKind::Int, std::nullopt},
                {"begin", AttrKind::Int, std::nullopt},
                {"end", AttrKind::Int, std::nullopt}},
      .fusion = FusionClass::Opaque,
      .inferShape = inferSliceBackward,
      .macs = nullptr,
      .layer = std::nullopt,
      .grad = nullptr,
      .trainForm = "",
      .role = OpRole::Backward,
      .internal = true,
      .precision = Precision::Follow,
  });
}

} // namespace dtnn::ir
