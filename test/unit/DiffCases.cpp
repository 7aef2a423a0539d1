// The case-building helpers and the tolerances shared by several op
// families, declared in DiffCases.h: operands, one-op cases, and the bounds
// of exact ops, of sums and dot products, and of elementwise ops of a few
// roundings, in the conventions stated at the top of DiffCases.h.
#include "DiffCases.h"

#include "runtime/BFloat16.h"


#include <cmath>

namespace dtnn::test::diff {

Operand input(std::string name, std::vector<int64_t> dims, std::vector<double> values,
              bool absInMagnitude) {
  Operand o;
  o.name = std::move(name);
  o.dims = std::move(dims);
  o.values = std::move(values);
  o.absInMagnitude = absInMagnitude;
  return o;
}

Operand param(std::string name, std::vector<int64_t> dims, std::vector<double> values,
              bool absInMagnitude) {
  Operand o = input(std::move(name), std::move(dims), std::move(values), absInMagnitude);
  o.isParam = true;
  return o;
}

int64_t numel(const std::vector<int64_t> &dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

Case oneOp(std::string op, std::string label, std::vector<Operand> operands, std::string line,
           std::vector<std::vector<int64_t>> resultDims) {
  Case c;
  c.op = std::move(op);
  c.label = std::move(label);
  c.operands = std::move(operands);
  std::string lhs, types;
  for (size_t i = 0; i < resultDims.size(); ++i) {
    lhs += (i ? ", %" : "%") + std::to_string(i);
    types += (i ? ", " : "") + typeText(resultDims[i]);
    c.results.push_back("%" + std::to_string(i));
  }
  c.body = {lhs + " = " + line + " : " + types};
  c.resultDims = std::move(resultDims);
  return c;
}

// Ops with no rounding that can differ: selections and copies (relu,
// maxpool, concat). Every output must match exactly.
Tolerance exactly() {
  return [](const Eval &e) {
    Allowed a;
    for (const auto &out : e.exact) a.emplace_back(out.size(), 0.0);
    return a;
  };
}

// Sums and dot products of at most `terms` terms per output element:
// gamma(terms) * sum|terms| on each side, the sum of |terms| taken from the
// magnitude run. Every output of the case is such a sum.
Tolerance sumOfTerms(double terms) {
  return [terms](const Eval &e) {
    Allowed a;
    for (const auto &m : e.magnitude) {
      a.emplace_back();
      for (double v : m) a.back().push_back(2 * gamma(terms) * v);
    }
    return a;
  };
}

// Elementwise ops whose each side errs by at most gamma(refRoundings) and
// gamma(otherRoundings) relative to the exact result.
Tolerance relative(double refRoundings, double otherRoundings) {
  return [=](const Eval &e) {
    Allowed a;
    for (const auto &out : e.exact) {
      a.emplace_back();
      for (double v : out)
        a.back().push_back((gamma(refRoundings) + gamma(otherRoundings)) * std::abs(v));
    }
    return a;
  };
}

Case inBf16(Case c) {
  for (Operand &o : c.operands) {
    if (!o.dtype.empty()) continue;
    for (double &v : o.values) v = runtime::roundToBf16(static_cast<float>(v));
  }
  c.dtype = "bf16";
  c.label += " (bf16)";
  Tolerance f32 = c.tolerance;
  c.tolerance = [f32](const Eval &e) {
    Allowed a = f32(e);
    for (size_t i = 0; i < a.size() && i < e.exact.size(); ++i)
      for (size_t j = 0; j < a[i].size() && j < e.exact[i].size(); ++j)
        a[i][j] += 2 * kUBf16 * (std::abs(e.exact[i][j]) + a[i][j]);
    return a;
  };
  return c;
}

} // namespace dtnn::test::diff
