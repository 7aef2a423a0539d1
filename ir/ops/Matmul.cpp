// Matrix products, as torch.matmul of tensors of rank 2 or more: the last two
// dimensions are the matrices, [M,K] times [K,N] (each optionally transposed
// first, as a.transpose(-2, -1)), and the dimensions before them are batch
// dimensions that broadcast with numpy's rules ([?,H,T,D] times [?,H,D,T],
// or [?,T,D] times a [D,E] weight). The gradient is two matrix products,
// each summed back over the batch dimensions its operand broadcast along; a
// 2-d b that every matrix of a shares takes dense's weight gradient, which
// sums over all rows at once.
#include "ir/Builder.h"
#include "ir/OpTable.h"
#include "ir/ops/ShapeUtil.h"

namespace dtnn::ir {

namespace {

// The matrix dimensions of t, transposed when `transposed`: {rows, columns}.
std::pair<int64_t, int64_t> matrixOf(const TensorType &t, bool transposed) {
  int64_t r = t.dims[t.rank() - 2], c = t.dims[t.rank() - 1];
  return transposed ? std::make_pair(c, r) : std::make_pair(r, c);
}

// Operands a and b of one floating-point type, rank >= 2; attributes
// transpose_a and transpose_b. The result has the broadcast batch dimensions
// then [M,N].
Error inferMatmul(InferCtx &ctx) {
  const TensorType &a = ctx.operands[0], &b = ctx.operands[1];
  if (!isFloatType(a.dtype) || a.dtype != b.dtype)
    return ctx.fail("matmul expects two floating-point tensors of one element type, got " +
                        a.str() + " and " + b.str(),
                    {0, 1});
  if (a.rank() < 2 || b.rank() < 2)
    return ctx.fail("matmul multiplies matrices: both operands need rank 2 or more, got " +
                        a.str() + " and " + b.str(),
                    {a.rank() < 2 ? 0 : 1});
  bool ta = ctx.attrs.getBool("transpose_a"), tb = ctx.attrs.getBool("transpose_b");
  auto [m, k] = matrixOf(a, ta);
  auto [k2, n] = matrixOf(b, tb);
  if (isBatchDim(k) || isBatchDim(k2) || k != k2)
    return ctx.fail("matmul inner dimensions differ: " + a.str() + (ta ? " transposed" : "") +
                        " times " + b.str() + (tb ? " transposed" : "") + " (" + std::to_string(k) +
                        " against " + std::to_string(k2) + ")",
                    {0, 1});
  std::vector<int64_t> batchA(a.dims.begin(), a.dims.end() - 2);
  std::vector<int64_t> batchB(b.dims.begin(), b.dims.end() - 2);
  auto batch = broadcastDims(batchA, batchB);
  if (!batch)
    return ctx.fail(
        "matmul cannot broadcast the batch dimensions of " + a.str() + " and " + b.str(), {0, 1});
  batch->push_back(m);
  batch->push_back(n);
  ctx.results = {TensorType(a.dtype, std::move(*batch))};
  return Error::success();
}

// K multiply-accumulates per result element, counted per index of the
// result's first dimension (the batch).
int64_t matmulMacs(const std::vector<TensorType> &operands, const std::vector<TensorType> &results,
                   const AttrMap &attrs) {
  const TensorType &y = results[0];
  int64_t perSample = matrixOf(operands[0], attrs.getBool("transpose_a")).second * batchFactor(y);
  for (size_t i = 1; i < y.rank(); ++i) perSample *= batchMultiple(y.dims[i]);
  return perSample;
}

Value *product(Builder &b, Value *x, Value *y, bool tx, bool ty) {
  return b.create1("matmul", {x, y}, attrs({{"transpose_a", tx}, {"transpose_b", ty}}));
}

// Y = op(A) op(B): dA = dY op(B)^T (or its transpose when A is transposed),
// dB = op(A)^T dY (likewise), each summed back to its operand's type where
// the batch dimensions broadcast.
Error gradMatmul(GradCtx &ctx) {
  if (!ctx.dy[0]) return Error::success();
  const Op &op = ctx.op;
  Value *a = op.operand(0), *b = op.operand(1), *dy = ctx.dy[0];
  bool ta = op.attrs().getBool("transpose_a"), tb = op.attrs().getBool("transpose_b");
  if (ctx.needed[0]) {
    Value *g = ta ? product(ctx.b, b, dy, tb, true) : product(ctx.b, dy, b, false, !tb);
    if (!(ctx.dx[0] = reduceTo(ctx.b, g, a))) return ctx.b.takeError();
  }
  if (ctx.needed[1] && b->type().rank() == 2 && a->type().rank() > 2 && !ta) {
    // A weight shared by every matrix of the batch (x w^T, as nn.Linear): its gradient sums
    // over all rows of a and dy at once, as dense's does, instead of a product per matrix
    // summed afterwards.
    Value *g = tb ? ctx.b.create1("dense_backward_weights", {dy, a})
                  : ctx.b.create1("dense_backward_weights", {a, dy});
    if (!(ctx.dx[1] = g)) return ctx.b.takeError();
  } else if (ctx.needed[1]) {
    Value *g = tb ? product(ctx.b, dy, a, true, ta) : product(ctx.b, a, dy, !ta, false);
    if (!(ctx.dx[1] = reduceTo(ctx.b, g, b))) return ctx.b.takeError();
  }
  return Error::success();
}

} // namespace

void registerMatmulOps(BuiltinOps &t) {
  t.add({
      .name = "matmul",
      .summary = "Matrix product over the last two dimensions ([M,K] times [K,N], either "
                 "transposed first), the dimensions before them broadcasting as batch "
                 "dimensions, as torch.matmul.",
      .operands = {{"a"}, {"b"}},
      .attrs = {{"transpose_a", AttrKind::Bool, AttrValue(false)},
                {"transpose_b", AttrKind::Bool, AttrValue(false)}},
      .fusion = FusionClass::Opaque,
      .inferShape = inferMatmul,
      .macs = matmulMacs,
      .layer = std::nullopt,
      .grad = gradMatmul,
      .trainForm = "",
      .precision = Precision::Low,
  });
}

} // namespace dtnn::ir
