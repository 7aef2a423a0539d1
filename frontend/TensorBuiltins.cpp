// Builtins that build tensors from existing ops, for what PyTorch models use
// and dtnn needs no op of its own for: identity (nn.Identity), chunk
// (torch.chunk, ShuffleNet's channel split), adaptive_avgpool
// (nn.AdaptiveAvgPool2d to a size that divides the input) and mean over the
// spatial axes (ShuffleNet's x.mean([2, 3])).
#include "frontend/Elaborator.h"

#include "ir/OpTable.h"

namespace dtnn::frontend {

namespace {

ir::AttrMap attrsOf(std::initializer_list<std::pair<const char *, ir::AttrValue>> entries) {
  ir::AttrMap m;
  for (const auto &[k, v] : entries) m.set(k, v);
  return m;
}

} // namespace

Val Elaborator::callTensorBuiltin(const std::string &name, const SourceLoc &loc,
                                  std::vector<EvArg> &args) {
  auto fail = [&](const SourceLoc &at, const std::string &message) {
    error(at, message);
    return Val::poison();
  };
  // Positional arguments, then `axis=` for chunk and `keepdim=` for mean.
  std::vector<const EvArg *> pos;
  const EvArg *axisArg = nullptr;
  for (const EvArg &a : args) {
    if (a.name.empty()) pos.push_back(&a);
    else if ((name == "chunk" && a.name == "axis") || (name == "mean" && a.name == "keepdim")) {
      if (axisArg) return fail(a.loc, "argument '" + a.name + "' of '" + name + "' is given twice");
      axisArg = &a;
    }
    else return fail(a.loc, "'" + name + "' has no argument '" + a.name + "'");
  }
  size_t most = name == "chunk" ? (axisArg ? 2 : 3) : name == "identity" ? 1 : 2;
  size_t least = name == "identity" ? 1 : 2;
  if (pos.size() < least || pos.size() > most)
    return fail(loc, "'" + name + "' takes " +
                         (name == "identity" ? "a tensor"
                          : name == "chunk"  ? "a tensor, a number of chunks and an axis"
                          : name == "mean"   ? "a tensor and a list of axes"
                                             : "a tensor and an output size"));
  if (pos[0]->value.kind != Val::Kind::Tensor)
    return fail(pos[0]->loc, "'" + name + "' expects a tensor, got " + describe(pos[0]->value));
  const Val &x = pos[0]->value;
  const ir::TensorType &type = x.tensor->type();
  const ir::OpTable &ops = ir::OpTable::get();

  if (name == "identity") return x;

  if (name == "mean") {
    // Over the two spatial axes of [N, C, H, W]: global_avgpool, then [N, C] unless keepdim.
    const Val &axes = pos[1]->value;
    int64_t rank = static_cast<int64_t>(type.rank());
    std::vector<int64_t> want;
    if (axes.isSequence())
      for (const Val &a : axes.items())
        if (a.kind == Val::Kind::Int) want.push_back(a.i < 0 ? a.i + rank : a.i);
    if (rank != 4 || want != std::vector<int64_t>{2, 3})
      return fail(pos[1]->loc, "'mean' averages a tensor [N, C, H, W] over its axes [2, 3]; got " +
                                   describe(axes) + " of " + type.str());
    bool keep = false;
    if (axisArg) {
      if (axisArg->value.kind != Val::Kind::Bool)
        return fail(axisArg->loc, "'keepdim' of 'mean' must be bool, got " + describe(axisArg->value));
      keep = axisArg->value.b;
    }
    Val pooled = emitOp(*ops.lookup("global_avgpool"), loc, {x}, {}, {});
    if (keep || pooled.isPoison()) return pooled;
    return emitOp(*ops.lookup("flatten"), loc, {pooled}, {}, {});
  }

  if (name == "chunk") {
    const EvArg &chunksArg = *pos[1];
    if (chunksArg.value.kind != Val::Kind::Int || chunksArg.value.i < 1)
      return fail(chunksArg.loc, "'chunk' expects a positive number of chunks, got " + describe(chunksArg.value));
    const EvArg *ax = axisArg ? axisArg : pos.size() > 2 ? pos[2] : nullptr;
    int64_t axis = 1;
    if (ax) {
      if (ax->value.kind != Val::Kind::Int) return fail(ax->loc, "'chunk' expects an int axis, got " + describe(ax->value));
      axis = ax->value.i;
    }
    int64_t rank = static_cast<int64_t>(type.rank());
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank)
      return fail(ax ? ax->loc : loc, "axis " + std::to_string(ax ? ax->value.i : 1) +
                                           " is out of range for " + type.str());
    int64_t size = type.dims[static_cast<size_t>(axis)];
    if (size == ir::kDynamic)
      return fail(ax ? ax->loc : loc, "'chunk' cannot split the symbolic batch dimension");
    // As torch.chunk: chunks of ceil(size / chunks), the last one smaller (so maybe fewer).
    int64_t step = (size + chunksArg.value.i - 1) / chunksArg.value.i;
    std::vector<Val> parts;
    for (int64_t begin = 0; begin < size; begin += step) {
      ir::AttrMap attrs = attrsOf({{"axis", ir::AttrValue(axis)}, {"begin", ir::AttrValue(begin)},
                                   {"end", ir::AttrValue(std::min(size, begin + step))}});
      Val part = emitOp(*ops.lookup("slice"), loc, {x}, {}, std::move(attrs));
      if (part.isPoison()) return part;
      parts.push_back(part);
    }
    return sequence(Val::Kind::Tuple, std::move(parts), loc);
  }

  // adaptive_avgpool(x, s) or adaptive_avgpool(x, [h, w]) on [N, C, H, W].
  const EvArg &sizeArg = *pos[1];
  std::vector<int64_t> out;
  if (sizeArg.value.kind == Val::Kind::Int) out = {sizeArg.value.i, sizeArg.value.i};
  else if (sizeArg.value.isSequence() && sizeArg.value.items().size() == 2 &&
           sizeArg.value.items()[0].kind == Val::Kind::Int && sizeArg.value.items()[1].kind == Val::Kind::Int)
    out = {sizeArg.value.items()[0].i, sizeArg.value.items()[1].i};
  if (out.empty() || out[0] < 1 || out[1] < 1)
    return fail(sizeArg.loc, "'adaptive_avgpool' expects an output size: a positive int or two, got " +
                                 describe(sizeArg.value));
  if (type.rank() != 4)
    return fail(pos[0]->loc, "'adaptive_avgpool' expects a tensor [N, C, H, W], got " + type.str());
  int64_t h = type.dims[2], w = type.dims[3];
  if (out[0] == 1 && out[1] == 1) return emitOp(*ops.lookup("global_avgpool"), loc, {x}, {}, {});
  if (h % out[0] != 0 || w % out[1] != 0)
    return fail(sizeArg.loc, "'adaptive_avgpool' to " + std::to_string(out[0]) + "x" +
                                 std::to_string(out[1]) + " from " + std::to_string(h) + "x" +
                                 std::to_string(w) + " needs windows of different sizes; dtnn "
                                 "pools to sizes that divide the input's");
  std::vector<int64_t> kernel = {h / out[0], w / out[1]};
  if (kernel[0] == 1 && kernel[1] == 1) return x;
  return emitOp(*ops.lookup("avgpool"), loc, {x}, {},
                attrsOf({{"kernel", ir::AttrValue(kernel)}, {"stride", ir::AttrValue(kernel)}}));
}

} // namespace dtnn::frontend
