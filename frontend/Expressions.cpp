// Evaluation of expressions: literals, names, compile-time arithmetic and
// logic, indexing, conditionals, and tensor arithmetic (`+` on tensors
// becomes an `add` op).
#include "frontend/Elaborator.h"
#include "frontend/PyTorchNames.h"

#include "ir/OpTable.h"

#include <cmath>

namespace dtnn::frontend {

Val Elaborator::eval(const Expr &e) {
  switch (e.kind) {
  case Expr::Kind::Int: return Val::integer(e.intValue, e.loc);
  case Expr::Kind::Float: return Val::number(e.floatValue, e.loc);
  case Expr::Kind::String: return Val::string(e.text, e.loc);
  case Expr::Kind::Bool: return Val::boolean(e.boolValue, e.loc);
  case Expr::Kind::None: return Val::none(e.loc);
  case Expr::Kind::Name: return evalName(e);
  case Expr::Kind::Call: return evalCall(e);
  case Expr::Kind::Unary: return evalUnary(e);
  case Expr::Kind::Binary: return evalBinary(e);
  case Expr::Kind::Index: return evalIndex(e);
  case Expr::Kind::Tuple:
  case Expr::Kind::List: {
    std::vector<Val> items;
    for (const auto &k : e.kids) items.push_back(eval(*k));
    return sequence(e.kind == Expr::Kind::Tuple ? Val::Kind::Tuple : Val::Kind::List,
                    std::move(items), e.loc);
  }
  case Expr::Kind::If: {
    Val c = eval(*e.kids[0]);
    if (c.isPoison()) return c;
    if (c.kind != Val::Kind::Bool) {
      error(e.kids[0]->loc, "condition must be a bool, got " + describe(c));
      return Val::poison();
    }
    return eval(*e.kids[c.b ? 1 : 2]);
  }
  }
  return Val::poison();
}

Val Elaborator::evalName(const Expr &e) {
  if (Binding *b = lookup(e.text)) return b->value;
  // A layer or block named without a call is a reference to it.
  if (const ir::OpDef *op = ir::OpTable::get().lookup(e.text); op && op->internal) {
    error(e.loc, internalOpMessage(*op));
    return Val::poison();
  }
  if (const BlockDecl *block = program_.scopes.find(currentFile(), e.text)) {
    Val v = Val::callable(e.text, e.loc);
    v.block = block;
    return v;
  }
  if (ir::OpTable::get().lookup(e.text) || e.text == "identity") return Val::callable(e.text, e.loc);
  std::vector<std::string> names = callableNames();
  for (const auto &scope : frame().scopes)
    for (const auto &[n, _] : scope) names.push_back(n);
  error(e.loc, "undefined name '" + e.text + "'" + didYouMean(e.text, names));
  return Val::poison();
}

Val Elaborator::evalUnary(const Expr &e) {
  Val v = eval(*e.kids[0]);
  if (v.isPoison()) return v;
  if (e.text == "!" && v.kind == Val::Kind::Bool) return Val::boolean(!v.b, e.loc);
  if (e.text == "-" && v.kind == Val::Kind::Int && v.i != INT64_MIN) return Val::integer(-v.i, e.loc);
  if (e.text == "-" && v.kind == Val::Kind::Float) return Val::number(-v.f, e.loc);
  error(e.loc, "cannot apply '" + e.text + "' to " + describe(v), {note(v.origin, "value produced here")});
  return Val::poison();
}

namespace {

const char *tensorOpFor(const std::string &op) {
  if (op == "+") return "add";
  if (op == "-") return "sub";
  if (op == "*") return "mul";
  if (op == "/") return "div";
  return nullptr;
}

bool sameValue(const Val &a, const Val &b) {
  if (a.isNumber() && b.isNumber()) return a.asDouble() == b.asDouble();
  if (a.kind != b.kind) return false;
  switch (a.kind) {
  case Val::Kind::Bool: return a.b == b.b;
  case Val::Kind::String:
  case Val::Kind::Callable: return a.s == b.s;
  case Val::Kind::Tensor: return a.tensor == b.tensor;
  case Val::Kind::List:
  case Val::Kind::Tuple:
    if (a.items().size() != b.items().size()) return false;
    for (size_t i = 0; i < a.items().size(); ++i)
      if (!sameValue(a.items()[i], b.items()[i])) return false;
    return true;
  default: return true;
  }
}

} // namespace

Val Elaborator::evalBinary(const Expr &e) {
  const std::string &op = e.text;
  Val a = eval(*e.kids[0]);
  // && and || evaluate their right side only when needed.
  if ((op == "&&" || op == "||") && a.kind == Val::Kind::Bool && a.b == (op == "||"))
    return Val::boolean(a.b, e.loc);
  Val b = eval(*e.kids[1]);
  if (a.isPoison() || b.isPoison()) return Val::poison();
  auto mismatch = [&]() {
    error(e.loc, "cannot apply '" + op + "' to " + describe(a) + " and " + describe(b),
          {note(a.origin, "left operand produced here"), note(b.origin, "right operand produced here")});
    return Val::poison();
  };
  if (op == "&&" || op == "||") {
    if (a.kind != Val::Kind::Bool || b.kind != Val::Kind::Bool) return mismatch();
    return Val::boolean(op == "&&" ? a.b && b.b : a.b || b.b, e.loc);
  }
  // `is` compares as `==` does: the values dtnn has are compared by value (`x is None`).
  if (op == "==" || op == "!=" || op == "is" || op == "is not")
    return Val::boolean(sameValue(a, b) == (op == "==" || op == "is"), e.loc);
  if (a.kind == Val::Kind::Tensor && b.kind == Val::Kind::Tensor) {
    if (const char *name = tensorOpFor(op)) return tensorBinary(e, name, a, b);
    return mismatch();
  }
  if ((a.kind == Val::Kind::Tensor && b.isNumber()) || (a.isNumber() && b.kind == Val::Kind::Tensor)) {
    if (!tensorOpFor(op)) return mismatch();
    return tensorScalar(e, a, b);
  }
  if (!a.isNumber() || !b.isNumber()) {
    if (op == "+" && a.isSequence() && a.kind == b.kind) {
      std::vector<Val> items;
      items.reserve(a.items().size() + b.items().size());
      items.insert(items.end(), a.items().begin(), a.items().end());
      items.insert(items.end(), b.items().begin(), b.items().end());
      return sequence(a.kind, std::move(items), e.loc);
    }
    if (op == "+" && a.kind == Val::Kind::String && b.kind == Val::Kind::String)
      return Val::string(a.s + b.s, e.loc);
    return mismatch();
  }
  if (op == "**") return power(e.loc, a, b);
  if (op == "<") return Val::boolean(a.asDouble() < b.asDouble(), e.loc);
  if (op == "<=") return Val::boolean(a.asDouble() <= b.asDouble(), e.loc);
  if (op == ">") return Val::boolean(a.asDouble() > b.asDouble(), e.loc);
  if (op == ">=") return Val::boolean(a.asDouble() >= b.asDouble(), e.loc);
  if ((op == "/" || op == "//" || op == "%") && b.asDouble() == 0) {
    error(e.loc, "division by zero", {note(b.origin, "divisor produced here")});
    return Val::poison();
  }
  // As Python's: `/` divides exactly (7 / 2 is 3.5), `//` floors (7 // 2 is 3, -7 // 2 is -4),
  // and `%` takes the divisor's sign (-7 % 2 is 1); between ints `//` and `%` give ints.
  if (a.kind == Val::Kind::Int && b.kind == Val::Kind::Int && op != "/") {
    int64_t r = 0;
    bool overflow = false;
    if (op == "+") overflow = __builtin_add_overflow(a.i, b.i, &r);
    else if (op == "-") overflow = __builtin_sub_overflow(a.i, b.i, &r);
    else if (op == "*") overflow = __builtin_mul_overflow(a.i, b.i, &r);
    else if (a.i == INT64_MIN && b.i == -1) overflow = op == "//";
    else {
      int64_t q = a.i / b.i, m = a.i % b.i;
      if (m != 0 && (m < 0) != (b.i < 0)) {
        --q;
        m += b.i;
      }
      r = op == "//" ? q : m;
    }
    if (overflow) {
      error(e.loc, "integer overflow in '" + op + "'");
      return Val::poison();
    }
    return Val::integer(r, e.loc);
  }
  double x = a.asDouble(), y = b.asDouble();
  if (op == "+") return Val::number(x + y, e.loc);
  if (op == "-") return Val::number(x - y, e.loc);
  if (op == "*") return Val::number(x * y, e.loc);
  if (op == "//") return Val::number(std::floor(x / y), e.loc);
  if (op == "%") {
    double m = std::fmod(x, y);
    return Val::number(m != 0 && (m < 0) != (y < 0) ? m + y : m, e.loc);
  }
  if (op == "/") {
    Val v = Val::number(x / y, e.loc);
    if (a.kind == Val::Kind::Int && b.kind == Val::Kind::Int) v.quotient = std::pair{a.i, b.i};
    return v;
  }
  return mismatch();
}

Val Elaborator::power(const SourceLoc &loc, const Val &a, const Val &b) {
  if (a.kind == Val::Kind::Int && b.kind == Val::Kind::Int && b.i >= 0) {
    // Squaring: once base * base overflows, a higher bit of the exponent makes the result do so.
    int64_t result = 1, base = a.i;
    bool overflow = false;
    for (uint64_t k = static_cast<uint64_t>(b.i); k != 0 && !overflow; k >>= 1) {
      if (k & 1) overflow = __builtin_mul_overflow(result, base, &result);
      if (k > 1 && !overflow) overflow = __builtin_mul_overflow(base, base, &base);
    }
    if (overflow) {
      error(loc, "integer overflow in " + std::to_string(a.i) + " ** " + std::to_string(b.i));
      return Val::poison();
    }
    return Val::integer(result, loc);
  }
  double r = std::pow(a.asDouble(), b.asDouble());
  if (!std::isfinite(r)) {
    error(loc, describe(a) + " ** " + describe(b) + " is not a finite number",
          {note(a.origin, "base produced here"), note(b.origin, "exponent produced here")});
    return Val::poison();
  }
  return Val::number(r, loc);
}

Val Elaborator::evalIndex(const Expr &e) {
  Val seq = eval(*e.kids[0]);
  Val idx = eval(*e.kids[1]);
  if (seq.isPoison() || idx.isPoison()) return Val::poison();
  if (!seq.isSequence()) {
    error(e.loc, "cannot index " + describe(seq), {note(seq.origin, "value produced here")});
    return Val::poison();
  }
  if (idx.kind != Val::Kind::Int) {
    error(e.loc, "index must be an int, got " + describe(idx));
    return Val::poison();
  }
  int64_t n = static_cast<int64_t>(seq.items().size());
  int64_t i = idx.i < 0 ? idx.i + n : idx.i;
  if (i < 0 || i >= n) {
    error(e.loc, "index " + std::to_string(idx.i) + " is out of range for " + describe(seq),
          {note(seq.origin, "value produced here")});
    return Val::poison();
  }
  return seq.items()[static_cast<size_t>(i)];
}

// x * k and x / k scale x; x + k, x - k, k - x and k / x take a tensor of k's shaped like x
// (fill), which has no gradient.
Val Elaborator::tensorScalar(const Expr &e, const Val &a, const Val &b) {
  const std::string &op = e.text;
  bool tensorLeft = a.kind == Val::Kind::Tensor;
  const Val &t = tensorLeft ? a : b;
  double k = (tensorLeft ? b : a).asDouble();
  const ir::OpTable &ops = ir::OpTable::get();
  auto make = [&](const char *name, std::vector<Val> in, const char *attr, double v) {
    ir::AttrMap attrs;
    if (attr) attrs.set(attr, ir::AttrValue(v));
    return emitOp(*ops.lookup(name), e.loc, in, {}, std::move(attrs));
  };
  if (op == "*") return make("scale", {t}, "factor", k);
  if (op == "/" && tensorLeft) {
    if (k == 0) {
      error(e.loc, "division by zero", {note(b.origin, "divisor produced here")});
      return Val::poison();
    }
    return make("scale", {t}, "factor", 1.0 / k);
  }
  Val constant = make("fill", {t}, "value", k);
  if (constant.isPoison()) return constant;
  const char *name = tensorOpFor(op);
  return make(name, tensorLeft ? std::vector<Val>{t, constant} : std::vector<Val>{constant, t},
              nullptr, 0);
}

Val Elaborator::tensorBinary(const Expr &e, const std::string &opName, const Val &a, const Val &b) {
  const ir::OpDef *def = ir::OpTable::get().lookup(opName);
  return emitOp(*def, e.loc, {a, b}, {}, ir::AttrMap());
}

} // namespace dtnn::frontend
