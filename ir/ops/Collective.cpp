// Collectives as ops with a start and a wait. allreduce_start begins reducing
// its buffers over all ranks and yields a token; allreduce_wait takes the
// token and the same buffers, waits until the reduction is done, and yields
// their new versions (it writes them in place). Between the two, the IR says
// the communication is in flight: the verifier allows no other use of the
// buffers there, so kernels may run while the reduction progresses.
#include "ir/OpTable.h"
#include "ir/ops/ShapeUtil.h"

namespace dtnn::ir {

namespace {

Error checkReduction(InferCtx &ctx, const char *op) {
  const std::string &kind = ctx.attrs.getString("op");
  if (kind != "sum" && kind != "mean" && kind != "mean_deferred")
    return ctx.fail(std::string(op) + " op must be \"sum\", \"mean\" or \"mean_deferred\", got \"" +
                    kind + "\"");
  const std::string &algorithm = ctx.attrs.getString("algorithm");
  if (algorithm != "flat" && algorithm != "hierarchical")
    return ctx.fail(std::string(op) + " algorithm must be \"flat\" or \"hierarchical\", got \"" +
                    algorithm + "\"");
  return Error::success();
}

// Operands: the buffers' scalar type; result: the number of ranks.
Error inferRankCount(InferCtx &ctx) {
  if (ctx.operands[0].rank() != 0 || !isFloatType(ctx.operands[0].dtype))
    return ctx.fail("rank_count takes a floating-point scalar, got " + ctx.operands[0].str(), {0});
  ctx.results = {ctx.operands[0]};
  return Error::success();
}

// Operands: one or more floating-point buffers; result: a token.
Error inferStart(InferCtx &ctx) {
  if (Error e = checkReduction(ctx, "allreduce_start")) return e;
  for (size_t i = 0; i < ctx.operands.size(); ++i)
    if (!isFloatType(ctx.operands[i].dtype))
      return ctx.fail("allreduce_start reduces floating-point buffers, got " +
                          ctx.operands[i].str() + " as operand " + std::to_string(i),
                      {static_cast<int>(i)});
  ctx.results = {TensorType(DType::Token, {})};
  return Error::success();
}

// Operands: the start's token, then its buffers; results: their new versions
// (added for the written operands).
Error inferWait(InferCtx &ctx) {
  if (Error e = checkReduction(ctx, "allreduce_wait")) return e;
  if (!ctx.operands[0].isToken())
    return ctx.fail("allreduce_wait expects the token of an allreduce_start, got " +
                        ctx.operands[0].str(),
                    {0});
  for (size_t i = 1; i < ctx.operands.size(); ++i)
    if (!isFloatType(ctx.operands[i].dtype))
      return ctx.fail("allreduce_wait reduces floating-point buffers, got " +
                          ctx.operands[i].str() + " as operand " + std::to_string(i),
                      {static_cast<int>(i)});
  ctx.results = {};
  return Error::success();
}

AttrSpec reduction() { return {"op", AttrKind::String, AttrValue(std::string("mean"))}; }
// The bucket number bucket-allreduce gives a merged reduction (for profiles
// and messages); -1: none.
AttrSpec bucket() { return {"bucket", AttrKind::Int, AttrValue(int64_t(-1))}; }
// How the reduction travels (runtime/Communicator.h): "flat", one ring over
// every rank; "hierarchical", within each node, then across the nodes (one
// rank a node), then back within each node. bucket-allreduce chooses.
AttrSpec algorithm() { return {"algorithm", AttrKind::String, AttrValue(std::string("flat"))}; }

} // namespace

void registerCollectiveOps(BuiltinOps &t) {
  t.add({
      .name = "allreduce_start",
      .summary = "Starts reducing its buffers over all ranks (\"sum\"; \"mean\": each rank's "
                 "scaled by its share of the batch first; \"mean_deferred\": by its share times "
                 "the rank count, the division by the rank count left to the consumers), flat or "
                 "hierarchically (\"algorithm\"); returns a token for allreduce_wait.",
      .operands = {{"x", OperandSpec::Variadic}},
      .attrs = {reduction(), bucket(), algorithm()},
      .fusion = FusionClass::Opaque,
      .collective = true,
      .inferShape = inferStart,
      .role = OpRole::Backward,
      .internal = true,
      .precision = Precision::Follow,
  });
  t.add({
      .name = "allreduce_wait",
      .summary = "Waits for the allreduce_start of its token and yields the reduced buffers, "
                 "written in place.",
      .operands = {{"token"}, {"x", OperandSpec::Variadic, Effect::Write}},
      .attrs = {reduction(), bucket(), algorithm()},
      .numResults = 0,
      .fusion = FusionClass::Opaque,
      .collective = true,
      .inferShape = inferWait,
      .role = OpRole::Backward,
      .internal = true,
      .precision = Precision::Follow,
  });
  // What a deferred mean divides by (fuse-updates reads it into the update).
  t.add({
      .name = "rank_count",
      .summary = "The number of ranks of the run, as a scalar of its operand's type (the "
                 "operand's value is not read).",
      .operands = {shapeOnly("like")},
      .attrs = {},
      .fusion = FusionClass::Opaque,
      .inferShape = inferRankCount,
      .role = OpRole::Update,
      .internal = true,
      .precision = Precision::Follow,
  });
}

} // namespace dtnn::ir
