// Calls: resolving a callee (local layer reference, builtin, block, op),
// binding arguments, expanding blocks in a new frame, and turning layer
// calls into IR ops with named parameters.
#include "frontend/Elaborator.h"
#include "frontend/PyTorchNames.h"

#include "frontend/Resolve.h"
#include "ir/InitSpec.h"
#include "ir/OpTable.h"

#include <filesystem>
#include <optional>
#include <set>

namespace dtnn::frontend {

namespace {

// Converts a language value to an attribute of kind `k`; nullopt if it does not fit.
std::optional<ir::AttrValue> toAttr(const Val &v, ir::AttrKind k) {
  switch (v.kind) {
  case Val::Kind::Int: return ir::coerceAttr(ir::AttrValue(v.i), k);
  case Val::Kind::Float: return ir::coerceAttr(ir::AttrValue(v.f), k);
  case Val::Kind::Bool: return ir::coerceAttr(ir::AttrValue(v.b), k);
  case Val::Kind::String: return ir::coerceAttr(ir::AttrValue(v.s), k);
  case Val::Kind::List:
  case Val::Kind::Tuple: {
    bool allInts = true;
    for (const Val &x : v.items()) {
      if (!x.isNumber()) return std::nullopt;
      allInts &= x.kind == Val::Kind::Int;
    }
    if (allInts) {
      std::vector<int64_t> xs;
      for (const Val &x : v.items()) xs.push_back(x.i);
      return ir::coerceAttr(ir::AttrValue(xs), k);
    }
    std::vector<double> xs;
    for (const Val &x : v.items()) xs.push_back(x.asDouble());
    return ir::coerceAttr(ir::AttrValue(xs), k);
  }
  default: return std::nullopt;
  }
}

// Whether any argument is a tensor, or a list or tuple holding one.
bool hasTensor(const std::vector<EvArg> &args) {
  for (const EvArg &a : args) {
    if (a.value.kind == Val::Kind::Tensor) return true;
    if (a.value.isSequence())
      for (const Val &x : a.value.items())
        if (x.kind == Val::Kind::Tensor) return true;
  }
  return false;
}

} // namespace

std::vector<EvArg> joinArgs(const std::vector<EvArg> &before, const std::vector<EvArg> &after,
                            bool beforeWins) {
  std::vector<EvArg> out;
  for (const EvArg &a : before)
    if (a.name.empty()) out.push_back(a);
  for (const EvArg &a : after)
    if (a.name.empty()) out.push_back(a);
  const std::vector<EvArg> &loser = beforeWins ? after : before;
  const std::vector<EvArg> &winner = beforeWins ? before : after;
  for (const EvArg &a : loser) {
    bool overridden = std::any_of(winner.begin(), winner.end(),
                                  [&](const EvArg &w) { return w.name == a.name; });
    if (!a.name.empty() && !overridden) out.push_back(a);
  }
  for (const EvArg &a : winner)
    if (!a.name.empty()) out.push_back(a);
  return out;
}

Val configured(Val callable, const std::vector<EvArg> &args) {
  std::vector<EvArg> bound =
      callable.bound ? joinArgs(*callable.bound, args, /*beforeWins=*/false) : args;
  callable.bound = std::make_shared<const std::vector<EvArg>>(std::move(bound));
  return callable;
}

ir::Location Elaborator::irLoc(const SourceLoc &l) const {
  SourceLoc out = l;
  auto it = program_.irFileNames.find(l.file);
  out.file = it != program_.irFileNames.end() ? it->second
                                              : std::filesystem::path(l.file).filename().string();
  return ir::Location(out);
}

std::vector<std::string> Elaborator::callableNames() const {
  std::vector<std::string> names;
  for (const std::string &n : ir::OpTable::get().names())
    if (!ir::OpTable::get().lookup(n)->internal) names.push_back(n);
  for (const auto &n : program_.scopes.names(currentFile())) names.push_back(n);
  for (const auto &n : builtinFunctionNames()) names.push_back(n);
  return names;
}

Val Elaborator::evalCall(const Expr &e) {
  std::vector<EvArg> args;
  for (const Arg &a : e.args) args.push_back({a.name, a.loc, eval(*a.value)});
  return call(e.text, e.loc, std::move(args));
}

Val Elaborator::call(const std::string &name, const SourceLoc &loc, std::vector<EvArg> args) {
  if (!step(loc)) return Val::poison();
  std::string target = name;
  const BlockDecl *boundBlock = nullptr;
  std::optional<Diagnostic> via;
  if (Binding *b = lookup(name)) {
    if (b->value.isPoison()) return Val::poison();
    if (b->value.kind != Val::Kind::Callable) {
      error(loc, "'" + name + "' is " + describe(b->value) + ", not a layer or block",
            {note(b->loc, "'" + name + "' is defined here")});
      return Val::poison();
    }
    target = b->value.s;
    boundBlock = b->value.block;
    // A configured layer applies its own arguments after the call's positional ones.
    if (b->value.bound) args = joinArgs(args, *b->value.bound, /*beforeWins=*/true);
    via = note(b->loc, "'" + name + "' is layer '" + target + "', bound here");
  }
  bool isBuiltin = false;
  for (const auto &n : builtinFunctionNames()) isBuiltin |= n == target;
  const BlockDecl *block = boundBlock;
  if (!block) block = program_.scopes.find(currentFile(), target);
  const ir::OpDef *op = ir::OpTable::get().lookup(target);
  // An internal op shadows no builtin function or block of its name (sqrt).
  if (op && op->internal && !isBuiltin && !block) {
    error(loc, internalOpMessage(*op));
    return Val::poison();
  }
  if (!isBuiltin && !block && !op) {
    error(loc, "unknown layer or block '" + target + "'" + didYouMean(target, callableNames()));
    return Val::poison();
  }
  for (const EvArg &a : args)
    if (a.value.isPoison()) return Val::poison();
  if (isBuiltin) return callBuiltin(target, loc, args);
  if (block) return callBlock(*block, loc, std::move(args));
  if (via) contextNotes_.push_back(*via);
  Val result = callOp(*op, loc, std::move(args));
  if (via) contextNotes_.pop_back();
  return result;
}

std::string Elaborator::takeName(const std::string &callee, std::vector<EvArg> &args) {
  std::string local = callee + "." + std::to_string(frame().counters[callee]++);
  for (auto it = args.begin(); it != args.end(); ++it) {
    if (it->name != "name") continue;
    if (it->value.kind != Val::Kind::String || it->value.s.empty() ||
        it->value.s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") !=
            std::string::npos)
      error(it->loc, "name= must be a non-empty string of letters, digits and '_', got " +
                         describe(it->value));
    else
      local = it->value.s;
    args.erase(it);
    break;
  }
  return local;
}

Val Elaborator::callBlock(const BlockDecl &b, const SourceLoc &loc, std::vector<EvArg> args) {
  if (frames_.size() > kMaxCallDepth) {
    error(loc, "block calls are nested more than " + std::to_string(kMaxCallDepth) +
                   " deep (is '" + b.name + "' recursive?)");
    overBudget_ = true;
    return Val::poison();
  }
  std::string local = takeName(b.name, args);
  // Match arguments to parameters before entering the new frame.
  std::vector<const EvArg *> bound(b.params.size(), nullptr);
  size_t next = 0;
  bool ok = true;
  for (const EvArg &a : args) {
    if (a.name.empty()) {
      if (next >= b.params.size()) {
        error(a.loc, "too many arguments to block '" + b.name + "': it takes " +
                         std::to_string(b.params.size()),
              {note(b.loc, "block '" + b.name + "' is declared here")});
        ok = false;
        break;
      }
      bound[next++] = &a;
      continue;
    }
    size_t i = 0;
    while (i < b.params.size() && b.params[i].name != a.name) ++i;
    if (i == b.params.size()) {
      std::vector<std::string> names;
      for (const auto &p : b.params) names.push_back(p.name);
      error(a.loc, "block '" + b.name + "' has no parameter '" + a.name + "'" + didYouMean(a.name, names),
            {note(b.loc, "block '" + b.name + "' is declared here")});
      ok = false;
    } else if (bound[i]) {
      error(a.loc, "parameter '" + a.name + "' of block '" + b.name + "' is given twice");
      ok = false;
    } else {
      bound[i] = &a;
    }
  }
  if (!ok) return Val::poison();

  Frame f;
  f.scopes.emplace_back();
  f.prefix = frame().prefix + local + ".";
  f.ownParamsAt = module_->params().size();
  f.block = &b;
  f.callLoc = loc;
  frames_.push_back(std::move(f));
  for (size_t i = 0; i < b.params.size() && ok; ++i) {
    const BlockParam &p = b.params[i];
    Val v;
    if (bound[i]) {
      v = bound[i]->value;
    } else if (p.defaultValue) {
      v = eval(*p.defaultValue);
    } else {
      frames_.pop_back();
      error(loc, "missing argument '" + p.name + "' in call to block '" + b.name + "'",
            {note(p.loc, "parameter declared here")});
      return Val::poison();
    }
    // None stands for any kind of value, as Optional[...] does.
    if (!p.kind.empty() && p.kind != "any" && !v.isPoison() && v.kind != Val::Kind::None) {
      if (p.kind == "float" && v.kind == Val::Kind::Int)
        v = Val::number(static_cast<double>(v.i), v.origin);
      if (p.kind != kindName(v.kind)) {
        SourceLoc at = bound[i] ? bound[i]->loc : loc;
        error(at, "argument '" + p.name + "' of block '" + b.name + "' must be " + p.kind +
                      ", got " + describe(v),
              {note(p.loc, "parameter declared here")});
        ok = false;
      }
    }
    define(p.name, p.loc, std::move(v), false);
  }
  if (ok) exec(b.body);
  Frame done = std::move(frames_.back());
  frames_.pop_back();
  if (!ok) return Val::poison();
  if (!done.returned) {
    if (!diags_.tooManyErrors() && !overBudget_)
      error(b.loc, "block '" + b.name + "' ended without a return statement",
            {note(loc, "called here")});
    return Val::poison();
  }
  if (done.results.size() == 1) return done.results[0];
  return sequence(Val::Kind::Tuple, std::move(done.results), loc);
}

std::string internalOpMessage(const ir::OpDef &op) {
  return "'" + op.name + "' is an internal op (" + ir::opRoleName(op.role) +
         ") that the compiler's passes make; a .dtnn model cannot call it";
}

namespace {

// PyTorch's transpose(a, b) swaps two dimensions; dtnn's takes a permutation of all of them.
// Success unless the arguments after the tensor are two ints, else a failure with the
// permutation that swaps them ("... write transpose(x, [0, 2, 1])").
Error pytorchTranspose(const std::vector<EvArg> &args, size_t first, const std::vector<Val> &tensors) {
  if (tensors.size() != 1 || args.size() != first + 2) return Error::success();
  for (size_t k = first; k < args.size(); ++k)
    if (!args[k].name.empty() || args[k].value.kind != Val::Kind::Int) return Error::success();
  int64_t rank = static_cast<int64_t>(tensors[0].tensor->type().rank());
  int64_t a = args[first].value.i, b = args[first + 1].value.i;
  std::string swap = std::to_string(a) + ", " + std::to_string(b);
  std::string why = "'transpose' takes a permutation of all " + std::to_string(rank) +
                    " dimensions, not two dimensions to swap as PyTorch's transpose(" + swap + ")";
  if (a < 0) a += rank;
  if (b < 0) b += rank;
  if (a < 0 || b < 0 || a >= rank || b >= rank) return Error::make(why);
  std::string perm;
  for (int64_t i = 0; i < rank; ++i)
    perm += (i ? ", " : "") + std::to_string(i == a ? b : i == b ? a : i);
  return Error::make(why + "; for that swap write transpose(x, [" + perm + "])");
}

} // namespace

// A negative axis, begin or end of a slice counts from the end, as in Python; the IR holds the
// non-negative form.
bool Elaborator::normalizeSlice(const std::vector<Val> &tensors, ir::AttrMap &values,
                                const std::map<std::string, SourceLoc> &argLocs, const SourceLoc &loc) {
  if (tensors.size() != 1 || !values.find("axis") || !values.find("begin") || !values.find("end"))
    return true;
  const ir::TensorType &type = tensors[0].tensor->type();
  int64_t rank = static_cast<int64_t>(type.rank());
  int64_t axis = values.getInt("axis");
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return true; // the shape rule reports it
  values.set("axis", ir::AttrValue(axis));
  int64_t size = type.dims[static_cast<size_t>(axis)];
  for (const char *key : {"begin", "end"}) {
    int64_t v = values.getInt(key);
    if (v >= 0) continue;
    if (ir::isBatchDim(size)) {
      auto at = argLocs.find(key);
      error(at != argLocs.end() ? at->second : loc,
            std::string("a negative ") + key + " counts from the end of the axis, whose size is "
            "the symbolic batch size, not known at compile time");
      return false;
    }
    values.set(key, ir::AttrValue(std::max<int64_t>(0, v + size)));
  }
  return true;
}

Val Elaborator::callOp(const ir::OpDef &def, const SourceLoc &loc, std::vector<EvArg> args) {
  // A layer called without a tensor is configured, not applied, as a PyTorch module is
  // built before it is called: `norm = batchnorm(eps=0.001)`, then `x |> norm`.
  if (def.layer && def.layer->tensorInputs > 0 && !hasTensor(args))
    return configured(Val::callable(def.name, loc), args);
  // A layer given its parameters as tensors too is the op itself, with no parameters of its own:
  // `embedding(tokens, wte)` and `dense(h, wte)` share one table (tied embeddings).
  size_t leading = 0;
  while (leading < args.size() && args[leading].name.empty() &&
         args[leading].value.kind == Val::Kind::Tensor)
    ++leading;
  const ir::LayerSpec *layer =
      def.layer && leading <= def.layer->tensorInputs ? &*def.layer : nullptr;
  std::string local = layer ? takeName(def.name, args) : "";
  bool variadic = !def.operands.empty() && def.operands[0].arity == ir::OperandSpec::Variadic;
  // Leading positional tensors are the op's inputs; a variadic op also
  // takes a list of tensors.
  std::vector<Val> tensors;
  size_t first = 0;
  unsigned wanted = layer ? layer->tensorInputs : def.maxOperands();
  for (; first < args.size() && args[first].name.empty(); ++first) {
    const Val &v = args[first].value;
    if (v.kind == Val::Kind::Tensor && tensors.size() < wanted) {
      tensors.push_back(v);
    } else if (variadic && v.isSequence() && !v.items().empty() &&
               std::all_of(v.items().begin(), v.items().end(),
                           [](const Val &x) { return x.kind == Val::Kind::Tensor; })) {
      tensors.insert(tensors.end(), v.items().begin(), v.items().end());
    } else {
      break;
    }
  }
  unsigned needed = layer ? layer->tensorInputs : def.minOperands();
  if (!variadic && tensors.size() < needed && first < args.size()) {
    error(args[first].loc, "'" + def.name + "' needs " + std::to_string(needed) + " tensor input" +
                               (needed == 1 ? "" : "s") + ", got " + describe(args[first].value));
    return Val::poison();
  }
  if (layer && tensors.size() != layer->tensorInputs) {
    error(loc, "'" + def.name + "' needs " + std::to_string(layer->tensorInputs) +
                   " tensor input" + (layer->tensorInputs == 1 ? "" : "s") + ", got " +
                   std::to_string(tensors.size()) + " (use `x |> " + def.name + "(...)`)");
    return Val::poison();
  }
  // An optional tensor operand may be named, as attn_mask= is in PyTorch.
  if (!layer)
    for (size_t k = first; k < args.size() && tensors.size() < def.operands.size();) {
      if (args[k].value.kind == Val::Kind::Tensor &&
          args[k].name == def.operands[tensors.size()].name) {
        tensors.push_back(args[k].value);
        args.erase(args.begin() + long(k));
      } else {
        ++k;
      }
    }
  if (def.name == "transpose") {
    if (Error why = pytorchTranspose(args, first, tensors)) {
      error(args[first].loc, why.message());
      return Val::poison();
    }
  }
  // Bind the remaining arguments to the layer's arguments or the op's attributes.
  const std::vector<ir::AttrSpec> &specs = layer ? layer->args : def.attrs;
  ir::AttrMap values;
  std::map<std::string, SourceLoc> argLocs;
  std::set<std::string> badArgs;
  size_t nextPositional = 0;
  bool ok = true;
  for (size_t k = first; k < args.size(); ++k) {
    const EvArg &a = args[k];
    const ir::AttrSpec *spec = nullptr;
    if (a.name.empty()) {
      if (nextPositional < specs.size()) spec = &specs[nextPositional++];
      if (!spec) {
        error(a.loc, "too many arguments to '" + def.name + "'");
        ok = false;
        continue;
      }
    } else {
      for (const auto &s : specs)
        if (s.name == a.name) spec = &s;
      if (!spec) {
        std::vector<std::string> names;
        for (const auto &s : specs) names.push_back(s.name);
        error(a.loc, "'" + def.name + "' has no argument '" + a.name + "'" + didYouMean(a.name, names) +
                         (a.name == "inplace" ? "; dtnn's layers never write their input, so leave it out" : ""));
        ok = false;
        continue;
      }
    }
    if (values.find(spec->name)) {
      error(a.loc, "argument '" + spec->name + "' of '" + def.name + "' is given twice");
      ok = false;
      continue;
    }
    auto attr = toAttr(a.value, spec->kind);
    if (!attr) {
      badArgs.insert(spec->name);
      error(a.loc, "argument '" + spec->name + "' of '" + def.name + "' must be " +
                       ir::attrKindName(spec->kind) + ", got " + describe(a.value));
      ok = false;
      continue;
    }
    values.set(spec->name, *attr);
    argLocs[spec->name] = a.loc;
  }
  for (const auto &s : specs)
    if (!values.find(s.name) && !s.defaultValue && !badArgs.count(s.name)) {
      error(loc, "missing argument '" + s.name + "' for '" + def.name + "'");
      ok = false;
    }
  // An initializer is checked here, where its argument is, not when the run starts.
  for (const auto &[name, at] : argLocs)
    if (name == "init" || name.ends_with("_init")) {
      Expected<ir::InitSpec> spec = ir::parseInitSpec(values.getString(name));
      if (!spec) {
        error(at, "'" + name + "' of '" + def.name + "': " + spec.error().message());
        ok = false;
      }
    }
  if (!ok) return Val::poison();
  for (const Val &t : tensors)
    if (t.isPoison()) return Val::poison();
  if (def.name == "slice" && !normalizeSlice(tensors, values, argLocs, loc)) return Val::poison();
  if (!layer) return emitOp(def, loc, tensors, {}, std::move(values));

  // Layers build their attributes and parameters from their arguments.
  std::vector<ir::TensorType> inputTypes;
  for (const Val &t : tensors) inputTypes.push_back(t.tensor->type());
  ir::AttrMap layerArgs;
  for (const auto &s : layer->args)
    layerArgs.set(s.name, values.find(s.name) ? *values.find(s.name) : *s.defaultValue);
  ir::LayerCtx ctx{inputTypes, layerArgs, {}, {}, {}};
  for (const auto &[name, at] : argLocs) ctx.given.insert(name);
  ctx.pytorchInit = pytorchInit_;
  if (Error e = layer->build(ctx)) {
    auto at = argLocs.find(ctx.errorArg);
    std::vector<Diagnostic> notes;
    for (const Val &t : tensors)
      notes.push_back(note(t.origin, "input of type " + t.tensor->type().str() + " produced here"));
    error(at != argLocs.end() ? at->second : loc, e.message(), std::move(notes));
    return Val::poison();
  }
  std::vector<ir::Value *> params;
  for (const ir::ParamSpec &p : ctx.params) {
    std::string full = frame().prefix + local + "." + p.suffix;
    if (!paramNames_.insert(full).second) {
      error(loc, "parameter name '" + full + "' is already used; give this layer a different name=");
      return Val::poison();
    }
    if (Error why = ir::sizeProblem(p.type)) {
      error(loc, "parameter '" + full + "' is too large: " + why.message());
      return Val::poison();
    }
    params.push_back(module_->addParam(full, p.type, p.init, p.trainable, irLoc(loc))->value);
  }
  return emitOp(def, loc, tensors, std::move(params), std::move(ctx.attrs));
}

Val Elaborator::emitOp(const ir::OpDef &def, const SourceLoc &loc, const std::vector<Val> &tensors,
                       std::vector<ir::Value *> params, ir::AttrMap attrs) {
  for (const Val &t : tensors)
    if (t.isPoison()) return Val::poison();
  if (!step(loc)) return Val::poison();
  // Remembered for the hint at a model's result (Elaborator.cpp): the first dense over the
  // last axis of a feature map is most often a missing flatten.
  if (def.name == "dense" && !tensors.empty() && tensors[0].tensor->type().rank() > 2 &&
      !firstLastAxisDense_)
    firstLastAxisDense_ = note(loc, "dense maps the last axis of its input " +
                                        tensors[0].tensor->type().str() +
                                        ", as nn.Linear does; to map each whole sample insert "
                                        "`flatten` before it");
  std::vector<ir::Value *> operands;
  std::vector<ir::TensorType> types;
  for (const Val &t : tensors) operands.push_back(t.tensor);
  operands.insert(operands.end(), params.begin(), params.end());
  for (ir::Value *v : operands) types.push_back(v->type());
  ir::fillDefaultAttrs(def, attrs);
  ir::InferCtx ctx{types, attrs, {}, {}};
  if (Error e = ir::inferResultTypes(def, ctx)) {
    std::vector<Diagnostic> notes;
    for (int i : ctx.blame) {
      if (i < 0 || static_cast<size_t>(i) >= operands.size()) continue;
      std::string role = def.operands.empty()
                             ? "operand"
                             : "operand '" + def.operands[std::min<size_t>(i, def.operands.size() - 1)].name + "'";
      if (static_cast<size_t>(i) < tensors.size())
        notes.push_back(note(tensors[i].origin, role + " of type " + types[i].str() + " produced here"));
      else
        notes.push_back(note(loc, role + " is parameter '" + operands[i]->name() + "' of type " +
                                      types[i].str()));
    }
    error(loc, e.message(), std::move(notes));
    return Val::poison();
  }
  ir::Op *op = graph_->addOp(def, std::move(operands), std::move(attrs), std::move(ctx.results),
                             irLoc(loc));
  if (op->results().size() == 1) return Val::tensorOf(op->result(0), loc);
  std::vector<Val> outs;
  for (ir::Value *r : op->results()) outs.push_back(Val::tensorOf(r, loc));
  return sequence(Val::Kind::Tuple, std::move(outs), loc);
}

} // namespace dtnn::frontend
