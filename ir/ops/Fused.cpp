// fused: a group of elementwise, broadcast and reduction ops held in a
// region, which the fuse-elementwise pass makes after autodiff and a backend
// runs as one kernel (the jit backend compiles it; the reference backend
// interprets it op by op). Its operands are the group's inputs, in the order
// of the region's arguments, and its results are what the region yields.
//
// fused_update: the optimizer updates of several parameters as one kernel,
// which fuse-updates makes: its region is one parameter's update, applied to
// each group of operands (a parameter, its gradient and its state buffers)
// over their whole buffers, with the per-step coefficients shared.
#include "ir/IR.h"
#include "ir/OpTable.h"
#include "ir/ops/FusedUpdate.h"
#include "ir/ops/ShapeUtil.h"

#include <map>
#include <optional>

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
      why = d.random       ? "it draws random numbers"
            : d.collective ? "it takes part in a collective"
                           : "it writes an operand in place";
    else if (op->body())
      why = "it holds a region";
    if (!why.empty())
      return Error::make("'" + d.name + "' cannot be in the region of 'fused': " + why);
  }
  return Error::success();
}

// Which operand each of n is: per group the parameter, the gradient and the
// states, then the coefficients.
std::vector<const OperandSpec *> bindUpdateGroups(const OpDef &def, const AttrMap &attrs,
                                                  size_t n) {
  std::vector<const OperandSpec *> specs;
  std::optional<UpdateGroupCounts> g = fusedUpdateGroups(attrs, n);
  if (!g) return specs;
  for (size_t k = 0; k < g->tensors; ++k) {
    specs.push_back(&def.operands[0]);
    specs.push_back(&def.operands[1]);
    for (size_t s = 0; s < g->states; ++s) specs.push_back(&def.operands[2]);
  }
  for (size_t c = 0; c < g->coefficients; ++c) specs.push_back(&def.operands[3]);
  return specs;
}

// A tensor of type t as one dimension (`?*k` if one of t's is a multiple of the batch).
TensorType flatType(const TensorType &t) {
  int64_t n = t.staticElements();
  bool batch = std::any_of(t.dims.begin(), t.dims.end(), isBatchDim);
  return TensorType(t.dtype, std::vector<int64_t>{batch ? batchDim(n) : n});
}

// Each group's tensors share the parameter's floating-point type, the
// coefficients are scalars of that element type, and the region, over the
// group's tensors flattened (it runs over whole buffers) and the
// coefficients, yields the new parameter and states at those types.
Error inferFusedUpdate(InferCtx &ctx) {
  if (!ctx.body) return ctx.fail("'fused_update' has no region");
  std::optional<UpdateGroupCounts> g = fusedUpdateGroups(ctx.attrs, ctx.operands.size());
  if (!g)
    return ctx.fail("'fused_update' needs tensors >= 1 groups of 2 + states operands, got " +
                    std::to_string(ctx.operands.size()) +
                    " operands for tensors=" + std::to_string(ctx.attrs.getInt("tensors")) +
                    ", states=" + std::to_string(ctx.attrs.getInt("states")));
  if (ctx.body->outputs().size() != 1 + g->states)
    return ctx.fail("the region of 'fused_update' yields " +
                    std::to_string(ctx.body->outputs().size()) +
                    " values, but each group updates " + std::to_string(1 + g->states));
  const std::vector<TensorType> &ops = ctx.operands;
  size_t firstCoefficient = g->tensors * g->width();
  for (size_t k = 0; k < g->tensors; ++k) {
    size_t at = k * g->width();
    const TensorType &p = ops[at];
    if (!isFloatType(p.dtype))
      return ctx.fail("fused_update expects floating-point parameters, got " + p.str(), {int(at)});
    std::vector<TensorType> args;
    for (size_t i = 0; i < g->width(); ++i) {
      if (ops[at + i] != p)
        return ctx.fail("fused_update operand " + std::to_string(at + i) + " is " +
                            ops[at + i].str() + ", but its group's parameter is " + p.str(),
                        {int(at), int(at + i)});
      args.push_back(flatType(p));
    }
    for (size_t c = 0; c < g->coefficients; ++c) {
      const TensorType &t = ops[firstCoefficient + c];
      if (t != TensorType(p.dtype, {}))
        return ctx.fail("fused_update coefficient " + std::to_string(c) + " must be a scalar " +
                            std::string(dtypeName(p.dtype)) + "[], got " + t.str(),
                        {int(firstCoefficient + c)});
      args.push_back(t);
    }
    Expected<std::map<const Value *, TensorType>> types = inferBodyTypes(*ctx.body, args);
    if (!types) return ctx.fail("'fused_update': " + types.error().message());
    for (const Value *out : ctx.body->outputs())
      if (types->at(out) != args[0])
        return ctx.fail("the region of 'fused_update' yields " + types->at(out).str() +
                        " for a parameter of " + args[0].str());
  }
  ctx.results = {};
  return Error::success();
}

// What an update's region may hold: what a fused region may, but no
// reduction (each element is updated from the same element of its group and
// the scalar coefficients).
Error verifyUpdateBody(const Graph &body) {
  if (Error e = verifyFusedBody(body)) return Error::make("fused_update: " + e.message());
  for (const auto &op : body.ops())
    if (op->def().fusion == FusionClass::Reduce)
      return Error::make("'" + op->name() +
                         "' cannot be in the region of 'fused_update': it is a reduction");
  return Error::success();
}

} // namespace

std::optional<UpdateGroupCounts> fusedUpdateGroups(const AttrMap &attrs, size_t operands) {
  int64_t k = attrs.getInt("tensors"), s = attrs.getInt("states");
  if (k < 1 || s < 0 || operands < size_t(k) * size_t(2 + s)) return std::nullopt;
  UpdateGroupCounts g{size_t(k), size_t(s), 0};
  g.coefficients = operands - g.tensors * g.width();
  return g;
}

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
      .precision = Precision::Follow,
  });
  t.add({
      .name = "fused_update",
      .summary = "The optimizer updates of `tensors` parameters as one kernel: its region, one "
                 "parameter's update over its flattened buffers and the coefficients, runs on "
                 "each group of operands (param, grad, `states` state buffers), in place.",
      .operands = {{"param", OperandSpec::Variadic, Effect::Write},
                   {"grad", OperandSpec::Variadic},
                   {"state", OperandSpec::Variadic, Effect::Write},
                   {"coefficient", OperandSpec::Variadic}},
      .attrs = {{"tensors", AttrKind::Int, AttrValue(int64_t(1))},
                {"states", AttrKind::Int, AttrValue(int64_t(0))},
                {"optimizer", AttrKind::String, AttrValue(std::string())}},
      .numResults = 0,
      .fusion = FusionClass::Opaque,
      .inferShape = inferFusedUpdate,
      .bindOperands = bindUpdateGroups,
      .role = OpRole::Update,
      .internal = true,
      .hasBody = true,
      .yieldsResults = false,
      .verifyBody = verifyUpdateBody,
      .precision = Precision::Float,
  });
}

} // namespace dtnn::ir
