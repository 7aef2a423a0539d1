// Builtins that build tensors from existing ops, for what PyTorch models use
// and dtnn needs no op of its own for: identity (nn.Identity), chunk
// (torch.chunk, ShuffleNet's channel split), adaptive_avgpool
// (nn.AdaptiveAvgPool2d, with torch's windows) and mean over axes
// (ShuffleNet's x.mean([2, 3]), torch's x.mean(dims, keepdim)).
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
    bool keep = false;
    if (axisArg) {
      if (axisArg->value.kind != Val::Kind::Bool)
        return fail(axisArg->loc, "'keepdim' of 'mean' must be bool, got " + describe(axisArg->value));
      keep = axisArg->value.b;
    }
    return meanOver(loc, x, *pos[1], keep);
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
  if (out[0] > h || out[1] > w)
    return fail(sizeArg.loc, "'adaptive_avgpool' to " + std::to_string(out[0]) + "x" +
                                 std::to_string(out[1]) + " from " + std::to_string(h) + "x" +
                                 std::to_string(w) + " would repeat input pixels; dtnn pools to "
                                 "sizes no larger than the input's");
  if (out[0] == 1 && out[1] == 1) return emitOp(*ops.lookup("global_avgpool"), loc, {x}, {}, {});
  if (h % out[0] == 0 && w % out[1] == 0) {
    std::vector<int64_t> kernel = {h / out[0], w / out[1]};
    if (kernel[0] == 1 && kernel[1] == 1) return x;
    return emitOp(*ops.lookup("avgpool"), loc, {x}, {},
                  attrsOf({{"kernel", ir::AttrValue(kernel)}, {"stride", ir::AttrValue(kernel)}}));
  }
  // Windows of different sizes: the mean over a window is the mean over its rows of the
  // means over its columns, so pool the rows, then the columns.
  Val rows = adaptivePool1d(loc, x, 2, out[0]);
  if (rows.isPoison()) return rows;
  return adaptivePool1d(loc, rows, 3, out[1]);
}

// torch's adaptive windows along `axis` (2 or 3) of [N, C, H, W]: window i covers
// [floor(i * size / out), ceil((i + 1) * size / out)). Equal windows take one avgpool; others
// take a slice and an avgpool each, joined by a concat.
Val Elaborator::adaptivePool1d(const SourceLoc &loc, const Val &x, int64_t axis, int64_t out) {
  const ir::OpTable &ops = ir::OpTable::get();
  int64_t size = x.tensor->type().dims[static_cast<size_t>(axis)];
  auto pool = [&](const Val &in, int64_t k) {
    if (k == 1) return in;
    std::vector<int64_t> kernel = axis == 2 ? std::vector<int64_t>{k, 1} : std::vector<int64_t>{1, k};
    return emitOp(*ops.lookup("avgpool"), loc, {in}, {},
                  attrsOf({{"kernel", ir::AttrValue(kernel)}, {"stride", ir::AttrValue(kernel)}}));
  };
  if (size % out == 0) return pool(x, size / out);
  std::vector<Val> parts;
  for (int64_t i = 0; i < out; ++i) {
    int64_t begin = i * size / out, end = ((i + 1) * size + out - 1) / out;
    Val part = emitOp(*ops.lookup("slice"), loc, {x}, {},
                      attrsOf({{"axis", ir::AttrValue(axis)}, {"begin", ir::AttrValue(begin)},
                               {"end", ir::AttrValue(end)}}));
    if (!part.isPoison()) part = pool(part, end - begin);
    if (part.isPoison()) return part;
    parts.push_back(part);
  }
  return emitOp(*ops.lookup("concat"), loc, parts, {}, attrsOf({{"axis", ir::AttrValue(axis)}}));
}

// mean(x, axes) as torch's x.mean(axes): the axes may be any but the batch axis, in any order,
// negative ones counting from the end. Over the two spatial axes of [N, C, H, W] it is a
// global_avgpool; otherwise the kept axes are moved to the front, the averaged ones reshaped
// into one, and a global_avgpool averages that.
Val Elaborator::meanOver(const SourceLoc &loc, const Val &x, const EvArg &axesArg, bool keep) {
  const ir::OpTable &ops = ir::OpTable::get();
  const ir::TensorType &type = x.tensor->type();
  int64_t rank = static_cast<int64_t>(type.rank());
  const Val &axes = axesArg.value;
  std::vector<Val> given = axes.isSequence() ? axes.items() : std::vector<Val>{axes};
  std::vector<bool> averaged(static_cast<size_t>(rank), false);
  for (const Val &a : given) {
    if (a.kind != Val::Kind::Int) {
      error(axesArg.loc, "'mean' expects an axis or a list of axes, got " + describe(axes));
      return Val::poison();
    }
    int64_t i = a.i < 0 ? a.i + rank : a.i;
    if (i < 0 || i >= rank) {
      error(axesArg.loc, "axis " + std::to_string(a.i) + " is out of range for " + type.str());
      return Val::poison();
    }
    if (i == 0 || type.dims[static_cast<size_t>(i)] == ir::kDynamic) {
      error(axesArg.loc, "'mean' averages within each sample; axis " + std::to_string(a.i) +
                             " of " + type.str() + " is the batch");
      return Val::poison();
    }
    if (averaged[static_cast<size_t>(i)]) {
      error(axesArg.loc, "axis " + std::to_string(a.i) + " is given twice in " + describe(axes));
      return Val::poison();
    }
    averaged[static_cast<size_t>(i)] = true;
  }
  if (given.empty()) {
    error(axesArg.loc, "'mean' needs at least one axis");
    return Val::poison();
  }
  std::vector<int64_t> perm, keptShape = {-1}, keepdimShape = {-1};
  int64_t keptCount = 1, averagedCount = 1;
  for (int64_t i = 0; i < rank; ++i)
    if (!averaged[static_cast<size_t>(i)]) perm.push_back(i);
  for (int64_t i = 0; i < rank; ++i)
    if (averaged[static_cast<size_t>(i)]) perm.push_back(i);
  for (int64_t i = 1; i < rank; ++i) {
    int64_t d = type.dims[static_cast<size_t>(i)];
    keepdimShape.push_back(averaged[static_cast<size_t>(i)] ? 1 : d);
    if (averaged[static_cast<size_t>(i)]) {
      averagedCount *= d;
    } else {
      keptShape.push_back(d);
      keptCount *= d;
    }
  }
  auto reshape = [&](const Val &in, std::vector<int64_t> shape) {
    return emitOp(*ops.lookup("reshape"), loc, {in}, {}, attrsOf({{"shape", ir::AttrValue(shape)}}));
  };
  Val pooled;
  if (rank == 4 && averaged[2] && averaged[3] && !averaged[1]) {
    pooled = emitOp(*ops.lookup("global_avgpool"), loc, {x}, {}, {});
    if (pooled.isPoison() || keep) return pooled;
    return emitOp(*ops.lookup("flatten"), loc, {pooled}, {}, {});
  }
  Val moved = x;
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i) identity = identity && perm[i] == static_cast<int64_t>(i);
  if (!identity)
    moved = emitOp(*ops.lookup("transpose"), loc, {x}, {}, attrsOf({{"perm", ir::AttrValue(perm)}}));
  if (!moved.isPoison()) moved = reshape(moved, {-1, keptCount, averagedCount, 1});
  if (!moved.isPoison()) pooled = emitOp(*ops.lookup("global_avgpool"), loc, {moved}, {}, {});
  if (pooled.isPoison()) return pooled;
  return reshape(pooled, keep ? keepdimShape : keptShape);
}

} // namespace dtnn::frontend
