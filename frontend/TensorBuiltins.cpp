// Builtins that build tensors from existing ops, for what PyTorch models use
// and dtnn needs no op of its own for: identity (nn.Identity), chunk
// (torch.chunk, ShuffleNet's channel split), adaptive_avgpool
// (nn.AdaptiveAvgPool2d, with torch's windows) and mean over axes
// (ShuffleNet's x.mean([2, 3]), torch's x.mean(dims, keepdim)); and the
// math builtins given a tensor (torch.sqrt, torch.rsqrt, torch.exp,
// torch.log, torch.erf, torch.pow with a number exponent).
#include "frontend/Elaborator.h"

#include "ir/InitSpec.h"
#include "ir/OpTable.h"

#include <algorithm>
#include <cmath>
#include <optional>

namespace dtnn::frontend {

namespace {

ir::AttrMap attrsOf(std::initializer_list<std::pair<const char *, ir::AttrValue>> entries) {
  ir::AttrMap m;
  for (const auto &[k, v] : entries) m.set(k, v);
  return m;
}

} // namespace

bool isTensorMath(const std::string &name) {
  return name == "sqrt" || name == "rsqrt" || name == "exp" || name == "log" || name == "erf" ||
         name == "pow";
}

// sqrt(x), rsqrt(x), exp(x), erf(x), log(x) and log(x, base), pow(x, p) with
// x a tensor and base and p numbers.
Val Elaborator::callTensorMath(const std::string &name, const SourceLoc &loc,
                               std::vector<EvArg> &args) {
  auto fail = [&](const SourceLoc &at, const std::string &message) {
    error(at, message);
    return Val::poison();
  };
  for (const EvArg &a : args)
    if (!a.name.empty()) return fail(a.loc, "builtin '" + name + "' takes no named arguments");
  size_t want = name == "pow" ? 2 : name == "log" ? args.size() : 1;
  if (args.size() != want || args.size() > 2)
    return fail(loc, "'" + name + "' of a tensor takes " +
                         (name == "pow"   ? std::string("a tensor and a number exponent")
                          : name == "log" ? std::string("a tensor and optionally a number base")
                                          : std::string("one tensor")) +
                         ", got " + std::to_string(args.size()) +
                         (args.size() == 1 ? " argument" : " arguments"));
  if (args[0].value.kind != Val::Kind::Tensor)
    return fail(args[0].loc, "'" + name + "' takes the tensor first, got " +
                                 describe(args[0].value) +
                                 (name == "pow" ? "; for a number to a tensor's power write "
                                                  "exp(x * log(base))"
                                                : ""));
  if (args.size() == 2 && !args[1].value.isNumber())
    return fail(args[1].loc, "'" + name + "' takes a number " +
                                 (name == "pow" ? "exponent" : "base") + ", got " +
                                 describe(args[1].value) +
                                 (name == "pow" ? "; for a tensor exponent write exp(p * log(x))"
                                                : ""));
  const ir::OpTable &ops = ir::OpTable::get();
  ir::AttrMap attrs;
  if (name == "pow") attrs.set("exponent", ir::AttrValue(args[1].value.asDouble()));
  Val y = emitOp(*ops.lookup(name), loc, {args[0].value}, {}, std::move(attrs));
  if (name != "log" || args.size() == 1 || y.isPoison()) return y;
  double lnBase = std::log(args[1].value.asDouble());
  if (!std::isfinite(1 / lnBase) || !std::isfinite(lnBase))
    return fail(args[1].loc, "log base " + describe(args[1].value) + " is not a positive number "
                             "other than 1");
  return emitOp(*ops.lookup("scale"), loc, {y}, {},
                attrsOf({{"factor", ir::AttrValue(1 / lnBase)}}));
}

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
    if (ir::isBatchDim(size))
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

// The axes `axesArg` names of x for builtin `name`: an axis or a list, negative ones counting
// from the end, none twice; sorted. Reports an error and returns nothing when they are not.
std::optional<std::vector<int64_t>> Elaborator::axesOf(const std::string &name, const Val &x,
                                                       const EvArg &axesArg) {
  const ir::TensorType &type = x.tensor->type();
  int64_t rank = static_cast<int64_t>(type.rank());
  const Val &axes = axesArg.value;
  std::vector<Val> given = axes.isSequence() ? axes.items() : std::vector<Val>{axes};
  std::vector<bool> chosen(static_cast<size_t>(rank), false);
  for (const Val &a : given) {
    if (a.kind != Val::Kind::Int) {
      error(axesArg.loc, "'" + name + "' expects an axis or a list of axes, got " + describe(axes));
      return std::nullopt;
    }
    int64_t i = a.i < 0 ? a.i + rank : a.i;
    if (i < 0 || i >= rank) {
      error(axesArg.loc, "axis " + std::to_string(a.i) + " is out of range for " + type.str());
      return std::nullopt;
    }
    if (chosen[static_cast<size_t>(i)]) {
      error(axesArg.loc, "axis " + std::to_string(a.i) + " is given twice in " + describe(axes));
      return std::nullopt;
    }
    chosen[static_cast<size_t>(i)] = true;
  }
  if (given.empty()) {
    error(axesArg.loc, "'" + name + "' needs at least one axis");
    return std::nullopt;
  }
  std::vector<int64_t> out;
  for (int64_t i = 0; i < rank; ++i)
    if (chosen[static_cast<size_t>(i)]) out.push_back(i);
  return out;
}

// mean(x, axes) as torch's x.mean(axes): the axes may be any, in any order, negative ones
// counting from the end. Over the two spatial axes of [N, C, H, W] it is a global_avgpool;
// over others within each sample, the kept axes are moved to the front, the averaged ones
// reshaped into one, and a global_avgpool averages that; over the batch axis, a reduce_sum
// divided by the count (reduceOver).
Val Elaborator::meanOver(const SourceLoc &loc, const Val &x, const EvArg &axesArg, bool keep) {
  const ir::OpTable &ops = ir::OpTable::get();
  const ir::TensorType &type = x.tensor->type();
  int64_t rank = static_cast<int64_t>(type.rank());
  std::optional<std::vector<int64_t>> chosen = axesOf("mean", x, axesArg);
  if (!chosen) return Val::poison();
  if (chosen->front() == 0) return reduceOver("mean", loc, x, *chosen, keep, 0);
  std::vector<bool> averaged(static_cast<size_t>(rank), false);
  for (int64_t i : *chosen) averaged[static_cast<size_t>(i)] = true;
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

// sum, max, mean and var of x over `axes` (sorted, from axesOf), as torch's x.sum(axes),
// x.amax(axes), x.mean(axes) and x.var(axes, correction=c): a reduce_sum or reduce_max, which
// keeps the axes as dimensions of size 1; the mean divides by the count of the elements each
// result sums (count_like, known at run time when the batch axis is among them); the variance
// is the sum of squares about that mean divided by the count less `correction`. Without keepdim
// a reshape drops the axes.
Val Elaborator::reduceOver(const std::string &name, const SourceLoc &loc, const Val &x,
                           const std::vector<int64_t> &axes, bool keep, int64_t correction) {
  const ir::OpTable &ops = ir::OpTable::get();
  ir::AttrMap axesAttr = attrsOf({{"axes", ir::AttrValue(axes)}});
  auto op = [&](const char *opName, std::vector<Val> in, ir::AttrMap attrs = {}) {
    for (const Val &v : in)
      if (v.isPoison()) return v;
    return emitOp(*ops.lookup(opName), loc, in, {}, std::move(attrs));
  };
  auto meanOf = [&](const Val &v) {
    Val sum = op("reduce_sum", {v}, axesAttr);
    return op("div", {sum, op("count_like", {v, sum})});
  };
  Val r;
  if (name == "sum") r = op("reduce_sum", {x}, axesAttr);
  else if (name == "max") r = op("reduce_max", {x}, axesAttr);
  else if (name == "mean") r = meanOf(x);
  else {
    Val d = op("sub", {x, meanOf(x)});
    Val sq = op("reduce_sum", {op("mul", {d, d})}, axesAttr);
    r = op("div", {sq, op("count_like", {x, sq},
                          attrsOf({{"offset", ir::AttrValue(double(-correction))}}))});
  }
  if (r.isPoison() || keep) return r;
  const ir::TensorType &type = x.tensor->type();
  std::vector<int64_t> shape;
  for (size_t i = 0; i < type.rank(); ++i)
    if (std::find(axes.begin(), axes.end(), int64_t(i)) == axes.end())
      shape.push_back(ir::isBatchDim(type.dims[i]) ? -1 : type.dims[i]);
  return op("reshape", {r}, attrsOf({{"shape", ir::AttrValue(shape)}}));
}

// sum(x, axes, keepdim=false), max(x, axes, keepdim=false) and
// var(x, axes, keepdim=false, correction=1) of a tensor x.
Val Elaborator::callTensorReduction(const std::string &name, const SourceLoc &loc,
                                    std::vector<EvArg> &args) {
  std::vector<const EvArg *> pos;
  const EvArg *keepArg = nullptr, *correctionArg = nullptr;
  for (const EvArg &a : args) {
    const EvArg **slot = a.name == "keepdim"                      ? &keepArg
                         : a.name == "correction" && name == "var" ? &correctionArg
                                                                   : nullptr;
    if (a.name.empty()) {
      pos.push_back(&a);
    } else if (!slot) {
      error(a.loc, "'" + name + "' of a tensor has no argument '" + a.name + "'");
      return Val::poison();
    } else if (*slot) {
      error(a.loc, "argument '" + a.name + "' of '" + name + "' is given twice");
      return Val::poison();
    } else {
      *slot = &a;
    }
  }
  if (pos.size() != 2) {
    error(loc, "'" + name + "' of a tensor takes the tensor and an axis or a list of axes" +
                   (name == "var" ? ", then keepdim= and correction=" : ", then keepdim=") +
                   "; got " + std::to_string(pos.size()) +
                   (pos.size() == 1 ? " positional argument" : " positional arguments"));
    return Val::poison();
  }
  if (pos[0]->value.kind != Val::Kind::Tensor) {
    error(pos[0]->loc, "'" + name + "' takes the tensor first, got " + describe(pos[0]->value));
    return Val::poison();
  }
  bool keep = false;
  if (keepArg) {
    if (keepArg->value.kind != Val::Kind::Bool) {
      error(keepArg->loc,
            "'keepdim' of '" + name + "' must be bool, got " + describe(keepArg->value));
      return Val::poison();
    }
    keep = keepArg->value.b;
  }
  int64_t correction = 1;
  if (correctionArg) {
    if (correctionArg->value.kind != Val::Kind::Int || correctionArg->value.i < 0) {
      error(correctionArg->loc, "'correction' of 'var' must be an int >= 0 (1 for the unbiased "
                                "estimate, 0 for the population variance), got " +
                                    describe(correctionArg->value));
      return Val::poison();
    }
    correction = correctionArg->value.i;
  }
  std::optional<std::vector<int64_t>> axes = axesOf(name, pos[0]->value, *pos[1]);
  if (!axes) return Val::poison();
  return reduceOver(name, loc, pos[0]->value, *axes, keep, correction);
}

// param(shape, init="zeros", name=...): a learnable tensor, as PyTorch's nn.Parameter (a class
// token, a positional embedding, a layer scale), named by the block's prefix and name= (else
// "param.N"). It is placed before the parameters of the layers the block calls, as a module's
// state_dict lists its own parameters before its sub-modules', so converted weights pair in
// order.
Val Elaborator::callParam(const SourceLoc &loc, std::vector<EvArg> &args) {
  auto fail = [&](const SourceLoc &at, const std::string &message) {
    error(at, message);
    return Val::poison();
  };
  std::string local = takeName("param", args);
  const EvArg *shapeArg = nullptr, *initArg = nullptr;
  for (const EvArg &a : args) {
    const EvArg **slot = a.name.empty() || a.name == "shape" ? &shapeArg
                         : a.name == "init"                  ? &initArg
                                                             : nullptr;
    if (!slot) return fail(a.loc, "'param' has no argument '" + a.name + "'");
    if (*slot)
      return fail(a.loc, a.name.empty()
                             ? std::string("'param' takes one shape, then init= and name=")
                             : "argument '" + a.name + "' of 'param' is given twice");
    *slot = &a;
  }
  if (!shapeArg)
    return fail(loc, "'param' needs a shape, as in param([1, 1, 768], init=\"zeros\")");
  const Val &sv = shapeArg->value;
  std::vector<Val> items = sv.isSequence() ? sv.items() : std::vector<Val>{sv};
  std::vector<int64_t> dims;
  for (const Val &d : items) {
    if (d.kind != Val::Kind::Int || d.i < 1)
      return fail(shapeArg->loc, "'param' shape must be a positive int or a non-empty list of "
                                 "them (a parameter has no batch dimension), got " +
                                     describe(sv));
    dims.push_back(d.i);
  }
  if (dims.empty())
    return fail(shapeArg->loc, "'param' shape must not be empty, got " + describe(sv));
  std::string init = "zeros";
  if (initArg) {
    if (initArg->value.kind != Val::Kind::String)
      return fail(initArg->loc, "'init' of 'param' must be an initializer's name, got " +
                                    describe(initArg->value));
    init = initArg->value.s;
    Expected<ir::InitSpec> spec = ir::parseInitSpec(init);
    if (!spec) return fail(initArg->loc, "'init' of 'param': " + spec.error().message());
  }
  ir::TensorType type(ir::DType::F32, dims);
  std::string full = frame().prefix + local;
  if (Error why = ir::sizeProblem(type))
    return fail(loc, "parameter '" + full + "' is too large: " + why.message());
  if (!paramNames_.insert(full).second)
    return fail(loc, "parameter name '" + full + "' is already used; give this param a different "
                     "name=");
  ir::Param *p = module_->addParam(full, type, init, true, irLoc(loc));
  module_->moveLastParamTo(frame().ownParamsAt++);
  return Val::tensorOf(p->value, loc);
}

} // namespace dtnn::frontend
