// Compile-time builtin functions: shape queries on tensors (channels, dim,
// rank), sequence helpers (len, range, zip, enumerate, sum), and numeric helpers (min, max,
// abs, int, float, round, floor, ceil, and the math of width formulas: log,
// exp, sqrt, rsqrt, erf, pow). Those that build ops are in TensorBuiltins.cpp,
// the math functions too when given a tensor.
#include "frontend/Elaborator.h"

#include <algorithm>
#include <cmath>

namespace dtnn::frontend {

Val Elaborator::callBuiltin(const std::string &name, const SourceLoc &loc, std::vector<EvArg> &args) {
  if (name == "identity" || name == "chunk" || name == "adaptive_avgpool" || name == "mean")
    return callTensorBuiltin(name, loc, args);
  if (name == "param") return callParam(loc, args);
  if (name == "partial") {
    // functools.partial: partial(batchnorm, eps=0.001), partial(block, stride=2).
    if (args.empty() || !args[0].name.empty() || args[0].value.kind != Val::Kind::Callable) {
      error(args.empty() ? loc : args[0].loc,
            "'partial' expects a layer or block first, got " +
                (args.empty() ? std::string("nothing") : describe(args[0].value)));
      return Val::poison();
    }
    return configured(args[0].value, std::vector<EvArg>(args.begin() + 1, args.end()));
  }
  if (isTensorMath(name))
    for (const EvArg &a : args)
      if (a.value.kind == Val::Kind::Tensor) return callTensorMath(name, loc, args);
  if (name == "var" || ((name == "sum" || name == "max") && !args.empty() &&
                        args[0].value.kind == Val::Kind::Tensor))
    return callTensorReduction(name, loc, args);
  for (const EvArg &a : args)
    if (!a.name.empty()) {
      error(a.loc, "builtin '" + name + "' takes no named arguments");
      return Val::poison();
    }
  auto arity = [&](size_t lo, size_t hi) {
    if (args.size() >= lo && args.size() <= hi) return true;
    std::string count = lo == hi        ? std::to_string(lo)
                        : hi == SIZE_MAX ? "at least " + std::to_string(lo)
                                         : std::to_string(lo) + " to " + std::to_string(hi);
    error(loc, "'" + name + "' takes " + count + (lo == 1 && (hi == 1 || hi == SIZE_MAX) ? " argument" : " arguments") +
                   ", got " + std::to_string(args.size()));
    return false;
  };
  auto want = [&](const EvArg &a, Val::Kind k) {
    if (a.value.kind == k) return true;
    error(a.loc, "'" + name + "' expects " + kindName(k) + ", got " + describe(a.value));
    return false;
  };
  auto staticDim = [&](const EvArg &t, int64_t axis) -> Val {
    const ir::TensorType &type = t.value.tensor->type();
    int64_t r = static_cast<int64_t>(type.rank());
    int64_t i = axis < 0 ? axis + r : axis;
    if (i < 0 || i >= r) {
      error(loc, "dimension " + std::to_string(axis) + " is out of range for " + type.str(),
            {note(t.value.origin, "tensor produced here")});
      return Val::poison();
    }
    if (ir::isBatchDim(type.dims[i])) {
      error(loc, "dimension " + std::to_string(axis) + " of " + type.str() +
                     (type.dims[i] == ir::kDynamic ? " is" : " is a multiple of") +
                     " the symbolic batch size, not known at compile time");
      return Val::poison();
    }
    return Val::integer(type.dims[i], loc);
  };

  if (name == "channels") {
    if (!arity(1, 1) || !want(args[0], Val::Kind::Tensor)) return Val::poison();
    return staticDim(args[0], 1);
  }
  if (name == "dim") {
    if (!arity(2, 2) || !want(args[0], Val::Kind::Tensor) || !want(args[1], Val::Kind::Int))
      return Val::poison();
    return staticDim(args[0], args[1].value.i);
  }
  if (name == "rank") {
    if (!arity(1, 1) || !want(args[0], Val::Kind::Tensor)) return Val::poison();
    return Val::integer(static_cast<int64_t>(args[0].value.tensor->type().rank()), loc);
  }
  if (name == "len") {
    if (!arity(1, 1)) return Val::poison();
    const Val &v = args[0].value;
    if (v.isSequence()) return Val::integer(static_cast<int64_t>(v.items().size()), loc);
    if (v.kind == Val::Kind::String) return Val::integer(static_cast<int64_t>(v.s.size()), loc);
    error(args[0].loc, "'len' expects a list, tuple or string, got " + describe(v));
    return Val::poison();
  }
  if (name == "range") {
    if (!arity(1, 3)) return Val::poison();
    for (const EvArg &a : args)
      if (!want(a, Val::Kind::Int)) return Val::poison();
    int64_t lo = args.size() > 1 ? args[0].value.i : 0;
    int64_t hi = args.size() > 1 ? args[1].value.i : args[0].value.i;
    int64_t stepBy = args.size() > 2 ? args[2].value.i : 1;
    if (stepBy == 0) {
      error(args[2].loc, "range step must not be zero");
      return Val::poison();
    }
    __int128 span = static_cast<__int128>(hi) - lo;
    __int128 count = span == 0 || (span > 0) != (stepBy > 0) ? 0 : (span - (stepBy > 0 ? 1 : -1)) / stepBy + 1;
    if (count > static_cast<__int128>(SequenceBudget::kMaxLiveItems)) {
      error(loc, "range has " + std::to_string(static_cast<unsigned long long>(count)) +
                     " items; lists hold at most " + std::to_string(SequenceBudget::kMaxLiveItems));
      return Val::poison();
    }
    std::vector<Val> items;
    for (int64_t k = 0; k < static_cast<int64_t>(count); ++k) {
      if (!step(loc)) return Val::poison();
      items.push_back(Val::integer(lo + k * stepBy, loc));
    }
    return sequence(Val::Kind::List, std::move(items), loc);
  }
  if (name == "min" || name == "max") {
    if (args.empty()) return arity(1, SIZE_MAX), Val::poison();
    Val best = args[0].value;
    for (const EvArg &a : args) {
      if (!a.value.isNumber()) {
        error(a.loc, "'" + name + "' expects numbers, got " + describe(a.value));
        return Val::poison();
      }
      bool better = name == "min" ? a.value.asDouble() < best.asDouble()
                                  : a.value.asDouble() > best.asDouble();
      if (better) best = a.value;
    }
    best.origin = loc;
    return best;
  }
  if (name == "zip" || name == "enumerate") {
    // zip(a, b, ...): a list of tuples, as long as the shortest; enumerate(xs): (i, x) pairs.
    if (!arity(1, name == "zip" ? SIZE_MAX : 1)) return Val::poison();
    for (const EvArg &a : args)
      if (!a.value.isSequence()) {
        error(a.loc, "'" + name + "' expects lists or tuples, got " + describe(a.value));
        return Val::poison();
      }
    size_t n = SIZE_MAX;
    for (const EvArg &a : args) n = std::min(n, a.value.items().size());
    std::vector<Val> rows;
    for (size_t i = 0; i < n; ++i) {
      if (!step(loc)) return Val::poison();
      std::vector<Val> row;
      if (name == "enumerate") row.push_back(Val::integer(static_cast<int64_t>(i), loc));
      for (const EvArg &a : args) row.push_back(a.value.items()[i]);
      Val tuple = sequence(Val::Kind::Tuple, std::move(row), loc);
      if (tuple.isPoison()) return tuple;
      rows.push_back(std::move(tuple));
    }
    return sequence(Val::Kind::List, std::move(rows), loc);
  }
  if (name == "sum") {
    if (!arity(1, 1)) return Val::poison();
    const Val &v = args[0].value;
    if (!v.isSequence()) {
      error(args[0].loc, "'sum' expects a list or tuple of numbers, got " + describe(v));
      return Val::poison();
    }
    // Ints sum to an int (overflow is an error); a float anywhere makes a float.
    Val total = Val::integer(0, loc);
    for (const Val &x : v.items()) {
      if (!x.isNumber()) {
        error(args[0].loc, "'sum' expects numbers, got " + describe(x) + " in " + describe(v));
        return Val::poison();
      }
      if (total.kind == Val::Kind::Int && x.kind == Val::Kind::Int) {
        if (__builtin_add_overflow(total.i, x.i, &total.i)) {
          error(loc, "integer overflow in 'sum'");
          return Val::poison();
        }
      } else {
        total = Val::number(total.asDouble() + x.asDouble(), loc);
      }
    }
    return total;
  }
  if (name == "abs") {
    if (!arity(1, 1)) return Val::poison();
    const Val &v = args[0].value;
    if (v.kind == Val::Kind::Int && v.i != INT64_MIN) return Val::integer(v.i < 0 ? -v.i : v.i, loc);
    if (v.kind == Val::Kind::Float) return Val::number(std::fabs(v.f), loc);
    error(args[0].loc, "'abs' expects a number, got " + describe(v));
    return Val::poison();
  }
  if (name == "pow") {
    if (!arity(2, 2)) return Val::poison();
    for (const EvArg &a : args)
      if (!a.value.isNumber()) {
        error(a.loc, "'pow' expects numbers, got " + describe(a.value));
        return Val::poison();
      }
    return power(loc, args[0].value, args[1].value);
  }
  if (name == "log" || name == "exp" || name == "sqrt" || name == "rsqrt" || name == "erf") {
    // log(x) is the natural logarithm and log(x, base) another, as Python's math.log.
    if (!arity(1, name == "log" ? 2 : 1)) return Val::poison();
    for (const EvArg &a : args) {
      if (!a.value.isNumber()) {
        error(a.loc, "'" + name + "' expects a number, got " + describe(a.value));
        return Val::poison();
      }
    }
    double x = args[0].value.asDouble();
    double r = name == "exp"     ? std::exp(x)
               : name == "sqrt"  ? std::sqrt(x)
               : name == "rsqrt" ? 1 / std::sqrt(x)
               : name == "erf"   ? std::erf(x)
                                 : std::log(x);
    if (args.size() == 2) r /= std::log(args[1].value.asDouble());
    if (!std::isfinite(r)) {
      std::string call = name + "(" + describe(args[0].value) +
                         (args.size() == 2 ? ", " + describe(args[1].value) : "") + ")";
      error(loc, call + " is not a finite number");
      return Val::poison();
    }
    return Val::number(r, loc);
  }
  if (name == "int") {
    if (!arity(1, 1)) return Val::poison();
    const Val &v = args[0].value;
    if (v.kind == Val::Kind::Int) return Val::integer(v.i, loc); // a whole number, as meant
    // Toward zero, as Python's int(): int(-2.5) is -2.
    if (v.kind == Val::Kind::Float && std::isfinite(v.f) && std::fabs(v.f) < 9e18)
      return Val::integer(static_cast<int64_t>(std::trunc(v.f)), loc);
    error(args[0].loc, "'int' expects a finite number, got " + describe(v));
    return Val::poison();
  }
  if (name == "round" || name == "floor" || name == "ceil") {
    if (!arity(1, 1)) return Val::poison();
    const Val &v = args[0].value;
    if (v.kind == Val::Kind::Int) return Val::integer(v.i, loc);
    if (v.kind == Val::Kind::Float && std::isfinite(v.f) && std::fabs(v.f) < 9e18) {
      // round() rounds half to even, as Python's does: round(2.5) == 2, round(3.5) == 4.
      double r = name == "round" ? std::nearbyint(v.f) : name == "floor" ? std::floor(v.f) : std::ceil(v.f);
      return Val::integer(static_cast<int64_t>(r), loc);
    }
    error(args[0].loc, "'" + name + "' expects a finite number, got " + describe(v));
    return Val::poison();
  }
  if (name == "float") {
    if (!arity(1, 1)) return Val::poison();
    const Val &v = args[0].value;
    if (v.isNumber()) return Val::number(v.asDouble(), loc);
    error(args[0].loc, "'float' expects a number, got " + describe(v));
    return Val::poison();
  }
  if (name == "str") {
    // As Python's str(): "3", "0.5" (the shortest text that reads back the same), "True".
    if (!arity(1, 1)) return Val::poison();
    const Val &v = args[0].value;
    switch (v.kind) {
    case Val::Kind::Int: return Val::string(std::to_string(v.i), loc);
    case Val::Kind::Float: return Val::string(ir::formatDouble(v.f), loc);
    case Val::Kind::Bool: return Val::string(v.b ? "True" : "False", loc);
    case Val::Kind::String: return Val::string(v.s, loc);
    default: break;
    }
    error(args[0].loc, "'str' expects a number, a bool or a string, got " + describe(v));
    return Val::poison();
  }
  error(loc, "unknown builtin '" + name + "'");
  return Val::poison();
}

} // namespace dtnn::frontend
