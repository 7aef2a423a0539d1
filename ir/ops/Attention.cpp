// Scaled dot-product attention, as torch.nn.functional.scaled_dot_product_attention
// without dropout: for query q [..., L, E], key k [..., S, E] and value
// v [..., S, Ev] with the same batch dimensions,
//   y = softmax(scale * q k^T + mask) v                  [..., L, Ev]
// where the optional additive mask broadcasts to [..., L, S], is_causal adds
// -inf above the diagonal (position i attends to keys 0..i, top-left
// aligned as PyTorch's), and scale defaults to 1 / sqrt(E). It is one op so
// that kernels work a few heads at a time: the L x S scores are never all in
// memory at once. The backward op recomputes them from q and k rather than
// keeping them from the forward pass.
#include "ir/Builder.h"
#include "ir/OpTable.h"
#include "ir/ops/ShapeUtil.h"

#include <cmath>

namespace dtnn::ir {

namespace {

std::vector<AttrSpec> attentionAttrs() {
  return {{"is_causal", AttrKind::Bool, AttrValue(false)},
          {"scale", AttrKind::Float, AttrValue(0.0)}};
}

// Checks q, k, v and the mask (operands first..first+3) and returns the
// result type [..., L, Ev].
Expected<TensorType> attentionResult(InferCtx &ctx, size_t first) {
  const std::string op = "scaled_dot_product_attention";
  const TensorType &q = ctx.operands[first], &k = ctx.operands[first + 1],
                   &v = ctx.operands[first + 2];
  int q0 = int(first);
  if (!isFloatType(q.dtype) || k.dtype != q.dtype || v.dtype != q.dtype)
    return ctx.fail(op + " expects floating-point q, k and v of one element type, got " + q.str() +
                        ", " + k.str() + " and " + v.str(),
                    {q0, q0 + 1, q0 + 2});
  if (q.rank() < 2 || k.rank() != q.rank() || v.rank() != q.rank())
    return ctx.fail(op +
                        " needs q, k and v of one rank, 2 or more ([..., L, E], [..., S, E], "
                        "[..., S, Ev]), got " +
                        q.str() + ", " + k.str() + " and " + v.str(),
                    {q0, q0 + 1, q0 + 2});
  size_t r = q.rank();
  for (size_t i = 0; i + 2 < r; ++i)
    if (k.dims[i] != q.dims[i] || v.dims[i] != q.dims[i])
      return ctx.fail(op + " needs the same batch dimensions in q, k and v, got " + q.str() + ", " +
                          k.str() + " and " + v.str(),
                      {q0, q0 + 1, q0 + 2});
  if (k.dims[r - 1] != q.dims[r - 1])
    return ctx.fail(op + ": q and k need the same feature size E, got " + q.str() + " and " +
                        k.str(),
                    {q0, q0 + 1});
  if (v.dims[r - 2] != k.dims[r - 2])
    return ctx.fail(op + ": k and v need the same sequence length S, got " + k.str() + " and " +
                        v.str(),
                    {q0 + 1, q0 + 2});
  if (isBatchDim(q.dims[r - 1]) || isBatchDim(q.dims[r - 2]) || isBatchDim(k.dims[r - 2]))
    return ctx.fail(op + " needs static sequence lengths and feature size, got " + q.str(), {q0});
  if (ctx.operands.size() > first + 3) {
    const TensorType &m = ctx.operands[first + 3];
    std::vector<int64_t> scores(q.dims.begin(), q.dims.end() - 1);
    scores.push_back(k.dims[r - 2]);
    auto b = broadcastDims(scores, m.dims);
    if (m.dtype != q.dtype || m.rank() > r || !b || *b != scores)
      return ctx.fail(op + " attn_mask " + m.str() +
                          " must be additive, of q's element type, "
                          "and broadcast to the scores " +
                          TensorType(q.dtype, scores).str(),
                      {q0 + 3});
  }
  double scale = ctx.attrs.getFloat("scale");
  if (!std::isfinite(scale) || scale < 0)
    return ctx.fail(op + " scale must be positive and finite, or 0 for 1/sqrt(E), got " +
                    std::to_string(scale));
  std::vector<int64_t> y(q.dims.begin(), q.dims.end() - 1);
  y.push_back(v.dims[r - 1]);
  return TensorType(q.dtype, y);
}

// Operands q, k, v and an optional mask.
Error inferAttention(InferCtx &ctx) {
  Expected<TensorType> y = attentionResult(ctx, 0);
  if (!y) return y.takeError();
  ctx.results = {*y};
  return Error::success();
}

// Operands dy, then q, k, v and the mask as the forward op had them;
// results dq, dk, dv.
Error inferAttentionBackward(InferCtx &ctx) {
  Expected<TensorType> y = attentionResult(ctx, 1);
  if (!y) return y.takeError();
  if (ctx.operands[0] != *y)
    return ctx.fail("scaled_dot_product_attention_backward dy " + ctx.operands[0].str() +
                        " does not match the result " + y->str(),
                    {0});
  ctx.results = {ctx.operands[1], ctx.operands[2], ctx.operands[3]};
  return Error::success();
}

// 2 (L S E + L S Ev) multiply-accumulates per matrix, counted per index of
// the batch dimension.
int64_t attentionMacs(const std::vector<TensorType> &operands, const std::vector<TensorType> &,
                      const AttrMap &) {
  const TensorType &q = operands[0], &k = operands[1], &v = operands[2];
  size_t r = q.rank();
  int64_t perSample =
      q.dims[r - 2] * k.dims[r - 2] * (q.dims[r - 1] + v.dims[r - 1]) * batchFactor(q);
  for (size_t i = 1; i + 2 < r; ++i) perSample *= batchMultiple(q.dims[i]);
  return perSample;
}

Error gradAttention(GradCtx &ctx) {
  if (!ctx.dy[0]) return Error::success();
  const Op &op = ctx.op;
  if (op.operands().size() > 3 && ctx.needed[3])
    return Error::make("scaled_dot_product_attention has no gradient for its attn_mask, which "
                       "must not depend on parameters");
  std::vector<Value *> in = {ctx.dy[0]};
  for (Value *v : op.operands()) in.push_back(v);
  auto r = ctx.b.create("scaled_dot_product_attention_backward", in, op.attrs());
  if (r.empty()) return ctx.b.takeError();
  for (size_t i = 0; i < 3; ++i)
    if (ctx.needed[i]) ctx.dx[i] = r[i];
  return Error::success();
}

} // namespace

void registerAttentionOps(BuiltinOps &t) {
  t.add({
      .name = "scaled_dot_product_attention",
      .summary = "softmax(scale q k^T + attn_mask) v over the last two dimensions, with a causal "
                 "mask when is_causal and scale 1/sqrt(E) when 0, as "
                 "F.scaled_dot_product_attention; kernels hold the scores of a few heads at a "
                 "time.",
      .operands = {{"q"}, {"k"}, {"v"}, {"attn_mask", OperandSpec::Optional}},
      .attrs = attentionAttrs(),
      .fusion = FusionClass::Opaque,
      .inferShape = inferAttention,
      .macs = attentionMacs,
      .layer = std::nullopt,
      .grad = gradAttention,
      .trainForm = "",
      .precision = Precision::Low,
  });
  t.add({
      .name = "scaled_dot_product_attention_backward",
      .summary = "The gradients dq, dk and dv of scaled_dot_product_attention, its scores "
                 "recomputed from q and k a few heads at a time.",
      .operands = {{"dy"}, {"q"}, {"k"}, {"v"}, {"attn_mask", OperandSpec::Optional}},
      .attrs = attentionAttrs(),
      .numResults = 3,
      .fusion = FusionClass::Opaque,
      .inferShape = inferAttentionBackward,
      .macs = nullptr,
      .layer = std::nullopt,
      .grad = nullptr,
      .trainForm = "",
      .role = OpRole::Backward,
      .internal = true,
      .precision = Precision::Low,
  });
}

} // namespace dtnn::ir
