// fused: a group of elementwise, broadcast and reduction ops held in a
// region, which the fuse-elementwise pass makes after autodiff and a backend
// runs as one kernel (the jit backend compiles it; the reference backend
// interprets it op by op). Its operands are the group's inputs, in the order
// of the region's arguments, and its results are what the region yields.
#include "ir/IR.h"
#include "ir/OpTable.h"

#include <map>

namespace dtnn::ir {

namespace {

// The result types: the region's yields, inferred through the body from the
// operand types without changing the body, so the same region serves any
// batch a plan binds.
Error inferFused(InferCtx &ctx) {
  if (!ctx.body) return ctx.fail("'fused' has no region");
  Expected<std::map<const Value *, TensorType>> types = inferBodyTypes(*ctx.body, ctx.operands);
  if (!types) return ctx.fail("'fused': " + types.error().message());
  for (const Value *out : ctx.body->outputs()) ctx.results.push_back(types->at(out));
  return Error::success();
}

// What a fused region may hold: ops of the elementwise, broadcast and reduce
// fusion classes that neither write an operand, draw random numbers, take
// part in a collective nor hold a region themselves; and at least one of them.
Error verifyFusedBody(const Graph &body) {
  if (body.ops().empty()) return Error::make("the region of 'fused' holds no op");
  for (const auto &op : body.ops()) {
    const OpDef &d = op->def();
    std::string why;
    if (d.fusion == FusionClass::Opaque)
      why = "its fusion class is opaque";
    else if (!d.pure())
      why = d.random ? "it draws random numbers"
            : d.collective ? "it takes part in a collective"
                           : "it writes an operand in place";
    else if (op->body())
      why = "it holds a region";
    if (!why.empty())
      return Error::make("'" + d.name + "' cannot be in the region of 'fused': " + why);
  }
  return Error::success();
}

} // namespace

void registerFusedOps(BuiltinOps &t) {
  t.add({
      .name = "fused",
      .summary = "A group of elementwise, broadcast and reduction ops in a region, run as one "
                 "kernel; its results are what the region yields.",
      // Result 0 may take an input's storage where the kernel allows it.
      .operands = {{"inputs", OperandSpec::Variadic, Effect::Read, 0}},
      .attrs = {},
      .numResults = 0,
      .fusion = FusionClass::Opaque,
      .inferShape = inferFused,
      .role = OpRole::Forward,
      .internal = true,
      .hasBody = true,
      .verifyBody = verifyFusedBody,
  });
}

} // namespace dtnn::ir
