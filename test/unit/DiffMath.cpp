// Differential cases of the math functions (exp, log, sqrt, rsqrt, erf,
// pow), of sum_like, and of the region ops that run groups of elementwise
// work as one kernel: fused (elementwise and reducing regions) and
// fused_update (an optimizer update written in place). The generated
// kernels of the jit and of the cuda backend take them.
//
// Math function accuracy (relative to the result): the reference is
// glibc's (DiffCases.h: expf, logf, erff within 1 ulp <= 2u; powf within
// 1 ulp); the other side is assumed within the CUDA math library's
// documented maxima (CUDA C Programming Guide, "Mathematical Functions
// Appendix", single precision: expf 2 ulp, logf 1 ulp, erff 2 ulp, powf
// 4 ulp, sqrtf correctly rounded), 1 ulp <= 2u, which also covers the
// jit's calls of the same libm functions.
#include "DiffCases.h"

#include <cmath>

namespace dtnn::test::diff {
namespace {

// A unary op on values in [lo, hi), both sides within `ref` and `other`
// roundings of the exact result.
Case unaryCase(const std::string &op, const std::string &attrs, std::vector<int64_t> dims,
               double lo, double hi, double ref, double other, Rng &rng) {
  std::string line = op + " %x" + (attrs.empty() ? "" : " {" + attrs + "}");
  Case c = oneOp(op, dimsText(dims) + (attrs.empty() ? "" : " " + attrs),
                 {input("x", dims, rng.values(numel(dims), lo, hi))}, line, {dims});
  c.tolerance = relative(ref, other);
  return c;
}

// A region of `lines` over operands `ops` as one fused op yielding results
// of `resultDims`; `argTypes` are the region's argument declarations.
Case fusedCase(std::string label, std::vector<Operand> ops, const std::string &argTypes,
               const std::vector<std::string> &lines, std::vector<std::vector<int64_t>> resultDims,
               const std::string &yield) {
  std::string operands, types;
  for (const Operand &o : ops) operands += (operands.empty() ? " %" : ", %") + o.name;
  Case c = oneOp("fused", std::move(label), std::move(ops), "fused" + operands, resultDims);
  std::string body = c.body[0] + " {\n    (" + argTypes + ")\n";
  for (const std::string &l : lines) body += "    " + l + "\n";
  c.body = {body + "    " + yield + "\n  }"};
  return c;
}

} // namespace

std::vector<Case> mathCases() {
  std::vector<Case> cases;
  Rng rng{0x3a7};
  for (std::vector<int64_t> d : {std::vector<int64_t>{7, 13}, {2, 3, 5, 7}, {1000}}) {
    // exp: glibc 1 ulp, CUDA 2 ulp. The arguments stay where exp is normal.
    cases.push_back(unaryCase("exp", "", d, -10, 10, 2, 4, rng));
    // log of positive values: 1 ulp each side, relative to |log x|, which
    // is what a 1-ulp error of the result means.
    cases.push_back(unaryCase("log", "", d, 0.01, 100, 2, 2, rng));
    // sqrt is correctly rounded on both sides.
    cases.push_back(unaryCase("sqrt", "", d, 0, 100, 1, 1, rng));
    // rsqrt = 1 / sqrt(x + eps): the sum's rounding halves through the
    // square root, then the root and the quotient round: within gamma(3).
    cases.push_back(unaryCase("rsqrt", "eps=1e-05", d, 0, 10, 3, 3, rng));
    cases.push_back(unaryCase("erf", "", d, -3, 3, 2, 4, rng));
    // pow of positive bases: glibc 1 ulp, CUDA 4 ulp.
    for (const char *e : {"exponent=2", "exponent=0.5", "exponent=-1.5", "exponent=3"})
      cases.push_back(unaryCase("pow", e, d, 0.1, 4, 2, 8, rng));
  }

  // sum_like: x summed over the dimensions broadcasting added, a sum of
  // K = numel(x) / numel(like) terms per element.
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> sums = {
      {{2, 3, 5, 7}, {1, 3, 1, 1}}, {{2, 3, 5, 7}, {3, 1, 1}},  {{7, 13}, {13}},
      {{7, 13}, {7, 1}},             {{4, 300}, {1}},            {{64, 3, 2, 2}, {1, 3, 1, 1}}};
  for (const auto &[xd, ld] : sums) {
    Case c = oneOp("sum_like", "x=" + dimsText(xd) + " like=" + dimsText(ld),
                   {input("x", xd, rng.values(numel(xd), -2, 2), true),
                    input("like", ld, rng.values(numel(ld), -1, 1))},
                   "sum_like %x, %like", {ld});
    c.magnitudeRun = true;
    c.tolerance = sumOfTerms(static_cast<double>(numel(xd) / numel(ld)));
    cases.push_back(c);
  }

  // fused, elementwise: relu(x * s + z), s broadcast over channels (a
  // batch norm's affine part and a residual add). Each side rounds the
  // product and the sum: gamma(2) (|x s| + |z|), the magnitude run's
  // value; relu is exact and 1-Lipschitz.
  {
    std::vector<int64_t> xd = {2, 3, 5, 7}, sd = {1, 3, 1, 1};
    Case c = fusedCase(
        "relu(x*s+z) " + dimsText(xd),
        {input("x", xd, rng.values(numel(xd), -2, 2), true),
         input("s", sd, rng.values(numel(sd), -2, 2), true),
         input("z", xd, rng.values(numel(xd), -2, 2), true)},
        "%a: $T[2,3,5,7], %b: $T[1,3,1,1], %c: $T[2,3,5,7]",
        {"%1 = mul %a, %b : $T[2,3,5,7]", "%2 = add %1, %c : $T[2,3,5,7]",
         "%3 = relu %2 : $T[2,3,5,7]"},
        {xd}, "yield %3");
    c.magnitudeRun = true;
    c.tolerance = sumOfTerms(2);
    cases.push_back(c);
  }
  // fused, reducing: the squares of x + m summed down to m's shape, over
  // the outer and inner dimensions (channels of NCHW), over the last one
  // (rows) and over the first (columns). Each term (x + m)^2 rounds three
  // times and the K terms sum: within gamma(K + 3) sum (x + m)^2, at most
  // gamma(K + 3) sum (|x| + |m|)^2, the magnitude run's value (an add, not
  // a sub, so that the run on |operands| bounds each term).
  for (const auto &[xd, md] : std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>>{
           {{4, 3, 5, 7}, {1, 3, 1, 1}}, {{6, 50}, {6, 1}}, {{3, 2000}, {1, 2000}}}) {
    std::string xt = "$T" + dimsText(xd), mt = "$T" + dimsText(md);
    Case c = fusedCase("sum_like((x+m)^2) x=" + dimsText(xd) + " m=" + dimsText(md),
                       {input("x", xd, rng.values(numel(xd), -2, 2), true),
                        input("m", md, rng.values(numel(md), -1, 1), true)},
                       "%a: " + xt + ", %b: " + mt,
                       {"%1 = add %a, %b : " + xt, "%2 = mul %1, %1 : " + xt,
                        "%3 = sum_like %2, %b : " + mt},
                       {md}, "yield %3");
    c.magnitudeRun = true;
    c.tolerance = sumOfTerms(static_cast<double>(numel(xd) / numel(md)) + 3);
    cases.push_back(c);
  }

  // fused_update: SGD with momentum over two parameters in place, in
  // fuse-updates' arithmetic: m' = k1 m + k2 g, p' = p - lr m'. m' is a sum
  // of two rounded products, gamma(2) (|k1 m| + |k2 g|); p' adds the
  // rounding of lr m' and of the difference: gamma(4) (|p| + |lr|
  // (|k1 m| + |k2 g|)) covers both.
  {
    std::vector<int64_t> wd = {4, 8}, cd = {13};
    auto state = [](Operand o) {
      o.readBack = true;
      return o;
    };
    double lr = 0.05, k1 = 0.9, k2 = 1;
    std::vector<Operand> ops = {
        state(param("w", wd, rng.values(numel(wd), -2, 2))),
        input("gw", wd, rng.values(numel(wd), -2, 2)),
        state(param("mw", wd, rng.values(numel(wd), -1, 1))),
        state(param("c", cd, rng.values(numel(cd), -2, 2))),
        input("gc", cd, rng.values(numel(cd), -2, 2)),
        state(param("mc", cd, rng.values(numel(cd), -1, 1))),
        input("lr", {}, {lr}), input("k1", {}, {k1}), input("k2", {}, {k2})};
    Case c;
    c.op = "fused_update";
    c.label = "sgd momentum w=" + dimsText(wd) + " c=" + dimsText(cd);
    c.operands = ops;
    c.body = {"%0, %1, %2, %3 = fused_update @w, %gw, @mw, @c, %gc, @mc, %lr, %k1, %k2 "
              "{tensors=2, states=1, optimizer=\"sgd\"} : $T[4,8], $T[4,8], $T[13], $T[13] {\n"
              "    (%p: $T[?], %g: $T[?], %s0: $T[?], %c0: $T[], %c1: $T[], %c2: $T[])\n"
              "    %1 = mul %c1, %s0 : $T[?]\n"
              "    %2 = mul %c2, %g : $T[?]\n"
              "    %3 = add %1, %2 : $T[?]\n"
              "    %4 = mul %c0, %3 : $T[?]\n"
              "    %5 = sub %p, %4 : $T[?]\n"
              "    yield %5, %3\n"
              "  }",
              "%4 = add %gw, %gw : $T[4,8]"};
    c.results = {"%4"};
    c.resultDims = {wd};
    c.tolerance = [lr, k1, k2](const Eval &e) {
      // Outputs: %4 (exact: a doubling), then w, mw, c, mc read back.
      Allowed a;
      a.emplace_back(e.exact[0].size(), 0.0);
      for (const char *names : {"w", "c"}) {
        std::string p = names, m = "m" + p, g = "g" + p;
        const auto &pv = e.values(p), &mv = e.values(m), &gv = e.values(g);
        std::vector<double> ap, am;
        for (size_t i = 0; i < pv.size(); ++i) {
          double terms = std::abs(k1 * mv[i]) + std::abs(k2 * gv[i]);
          am.push_back(2 * gamma(2) * terms);
          ap.push_back(2 * gamma(4) * (std::abs(pv[i]) + std::abs(lr) * terms));
        }
        a.push_back(ap);
        a.push_back(am);
      }
      return a;
    };
    cases.push_back(c);
  }
  return cases;
}

} // namespace dtnn::test::diff
