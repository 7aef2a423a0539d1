// Differential cases of the convolution and dense ops, forward and
// backward (conv2d, dense and their backward_data, backward_weights and
// backward_bias ops) on fixed and random shapes and attributes; every
// result element is a sum of products, bounded by 2 gamma(terms) *
// sum|terms| with the sum of |terms| from the magnitude run.
#include "DiffCases.h"

#include "ir/ops/ShapeUtil.h"

#include <algorithm>
#include <cmath>

namespace dtnn::test::diff {

// ---------------------------------------------------------------------------
// Convolution: conv2d, conv2d_backward_data, conv2d_backward_weights,
// conv2d_backward_bias.
//
// Every result element is a sum of products of operand elements:
//   conv2d          y = b + sum over its window of x * w:  C/G * KH * KW (+1) terms
//   backward data   dx = sum of dy * w over the output positions and
//                   channels whose windows cover it: at most K/G * KH * KW
//   backward weights dw = sum over images and output positions of dy * x:
//                   N * OH * OW terms
//   backward bias   db = sum of dy over N * OH * OW
// so |a - b| <= 2 gamma(terms) * sum|terms|, with sum|terms| the op on the
// absolute values of its operands (the magnitude run); padding adds only
// zero terms, so the window size is an upper bound on the count.
namespace {

std::string convAttrs(const std::vector<int64_t> &stride, const std::vector<int64_t> &pad,
                      const std::vector<int64_t> &dilation, int64_t groups) {
  return "{stride=" + intsText(stride) + ", pad=" + intsText(pad) +
         ", dilation=" + intsText(dilation) + ", groups=" + std::to_string(groups) + "}";
}

} // namespace

std::string ConvGeom::attrs() const {
  return convAttrs({sh, sw}, {pt, pl, pb, pr}, {dh, dw}, groups);
}

std::string ConvGeom::label() const {
  return "x=" + dimsText(x()) + " w=" + dimsText(wt()) + (bias ? " +bias " : " ") + attrs();
}

namespace {

std::vector<ConvGeom> convGeoms() {
  // Fields: n c h w, k kh kw, sh sw, pad top left bottom right, dh dw,
  // groups, bias.
  std::vector<ConvGeom> gs = {
      // Batch 1, same padding.
      {1, 3, 7, 7, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, true},
      // Depthwise (groups == C), asymmetric padding, stride 2.
      {2, 6, 13, 7, 6, 3, 3, 2, 2, 0, 1, 2, 1, 1, 1, 6, false},
      // 2 groups of 2 channels, stride 3, dilation 2.
      {1, 4, 13, 13, 6, 3, 3, 3, 3, 2, 1, 0, 2, 2, 2, 2, true},
      // A 5x3 window, stride and dilation differing between the axes.
      {3, 5, 9, 11, 7, 5, 3, 1, 2, 2, 0, 1, 1, 2, 1, 1, true},
      // 1x1 with 4 groups (neither 1 nor C), stride 2.
      {2, 8, 7, 7, 4, 1, 1, 2, 2, 0, 0, 0, 0, 1, 1, 4, false},
      // Channels a multiple of oneDNN's blocks.
      {2, 16, 5, 5, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, true},
  };
  // And random ones.
  Rng rng{0xc0417};
  while (gs.size() < 9) {
    ConvGeom g{};
    g.c = rng.range(1, 8);
    std::vector<int64_t> divisors;
    for (int64_t d = 1; d <= g.c; ++d)
      if (g.c % d == 0) divisors.push_back(d);
    g.groups = divisors[rng.range(0, static_cast<int64_t>(divisors.size()) - 1)];
    g.k = g.groups * rng.range(1, 3);
    g.n = rng.range(1, 3);
    g.kh = rng.range(1, 5), g.kw = rng.range(1, 5);
    g.dh = rng.range(1, 2), g.dw = rng.range(1, 2);
    g.sh = rng.range(1, 3), g.sw = rng.range(1, 3);
    g.pt = rng.range(0, (g.kh - 1) * g.dh), g.pb = rng.range(0, (g.kh - 1) * g.dh);
    g.pl = rng.range(0, (g.kw - 1) * g.dw), g.pr = rng.range(0, (g.kw - 1) * g.dw);
    g.h = rng.range(std::max<int64_t>(1, (g.kh - 1) * g.dh + 1 - g.pt - g.pb), 15);
    g.w = rng.range(std::max<int64_t>(1, (g.kw - 1) * g.dw + 1 - g.pl - g.pr), 15);
    g.bias = rng.chance(0.5);
    if (g.oh() >= 1 && g.ow() >= 1) gs.push_back(g);
  }
  return gs;
}

} // namespace

std::vector<Case> convCases() {
  std::vector<Case> cases;
  Rng rng{0xc0}; // data
  for (const ConvGeom &g : convGeoms()) {
    std::string a = g.attrs(), l = g.label();
    auto x = rng.values(numel(g.x()), -1, 1), w = rng.values(numel(g.wt()), -1, 1);
    auto b = rng.values(g.k, -1, 1), dy = rng.values(numel(g.y()), -1, 1);
    int64_t window = g.c / g.groups * g.kh * g.kw, positions = g.n * g.oh() * g.ow();

    std::vector<Operand> ops = {input("x", g.x(), x, true), param("w", g.wt(), w, true)};
    if (g.bias) ops.push_back(param("b", {g.k}, b, true));
    Case fwd = oneOp("conv2d", l, ops, std::string("conv2d %x, @w") + (g.bias ? ", @b " : " ") + a,
                     {g.y()});
    fwd.magnitudeRun = true;
    fwd.tolerance = sumOfTerms(static_cast<double>(window + (g.bias ? 1 : 0)));
    cases.push_back(fwd);
    // With a fused relu (1-Lipschitz, and the identity on the magnitude run's
    // non-negative sums), the same bound holds.
    Case fused = fwd;
    fused.label += " act=relu";
    fused.body = {"%0 = conv2d %x, @w" + std::string(g.bias ? ", @b " : " ") +
                  a.substr(0, a.size() - 1) + ", act=\"relu\"} : " + typeText(g.y())};
    cases.push_back(fused);
    // With a residual added before the relu (oneDNN's sum post-op): one
    // more term in each sum (the magnitude run adds |r|).
    Case res = fwd;
    res.label += " residual act=relu";
    res.operands.push_back(input("r", g.y(), rng.values(numel(g.y()), -1, 1), true));
    res.body = {"%0 = conv2d %x, @w" + std::string(g.bias ? ", @b, " : ", ") + "%r " +
                a.substr(0, a.size() - 1) + ", act=\"relu\", residual=true} : " +
                typeText(g.y())};
    res.tolerance = sumOfTerms(static_cast<double>(window + (g.bias ? 2 : 1)));
    cases.push_back(res);

    Case bd =
        oneOp("conv2d_backward_data", l,
              {input("dy", g.y(), dy, true), input("w", g.wt(), w, true), input("x", g.x(), x)},
              "conv2d_backward_data %dy, %w, %x " + a, {g.x()});
    bd.magnitudeRun = true;
    bd.tolerance = sumOfTerms(static_cast<double>(g.k / g.groups * g.kh * g.kw));
    cases.push_back(bd);

    Case bw =
        oneOp("conv2d_backward_weights", l,
              {input("dy", g.y(), dy, true), input("x", g.x(), x, true), input("w", g.wt(), w)},
              "conv2d_backward_weights %dy, %x, %w " + a, {g.wt()});
    bw.magnitudeRun = true;
    bw.tolerance = sumOfTerms(static_cast<double>(positions));
    cases.push_back(bw);

    Case bb = oneOp("conv2d_backward_bias", "dy=" + dimsText(g.y()), {input("dy", g.y(), dy, true)},
                    "conv2d_backward_bias %dy", {{g.k}});
    bb.magnitudeRun = true;
    bb.tolerance = sumOfTerms(static_cast<double>(positions));
    cases.push_back(bb);
  }
  return cases;
}

// ---------------------------------------------------------------------------
// Dense: dense, dense_backward_data, dense_backward_weights,
// dense_backward_bias. Dot products as for the convolutions:
//   dense y [N,M] = x [N,K] w^T (+ b): K (+1) terms
//   backward data dx = dy [N,M] w [M,K]: M terms
//   backward weights dw = dy^T x: N terms
//   backward bias db = sum of dy over N: N terms
// where N counts the rows of an x of higher rank, [N, ..., K].
// each within 2 gamma(terms) * sum|terms| (magnitude run).
namespace {

// dense x [n, k], w [m, k] (+ b) with a fused relu6, sigmoid or tanh. The
// pre-activation z differs between the sides by at most B = 2 gamma(k + 1)
// sum|terms| (as dense's own bound, the sums computed here from the
// operands); relu6 is 1-Lipschitz and exact, tanh 1-Lipschitz and sigmoid
// 1/4-Lipschitz, and each side adds the error of evaluating the function
// (DiffActivation.cpp's bounds), taken where it is largest within B of z
// (both are monotone).
Tolerance denseActivation(const std::string &act, int64_t n, int64_t k, int64_t m, bool bias) {
  return [=](const Eval &e) {
    const std::vector<double> &x = e.values("x"), &w = e.values("w");
    const std::vector<double> *b = bias ? &e.values("b") : nullptr;
    Allowed a(1);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < m; ++j) {
        double z = b ? (*b)[size_t(j)] : 0, mag = b ? std::abs((*b)[size_t(j)]) : 0;
        for (int64_t c = 0; c < k; ++c) {
          double t = x[size_t(i * k + c)] * w[size_t(j * k + c)];
          z += t;
          mag += std::abs(t);
        }
        double bound = 2 * gamma(static_cast<double>(k + 1)) * mag;
        if (act == "sigmoid")
          a[0].push_back(bound / 4 + (kRefExp + gamma(2) + kOtherLogistic) * sigmoidOf(z + bound));
        else if (act == "tanh")
          a[0].push_back(bound + (kRefTanh + kOtherTanh) * std::tanh(std::abs(z) + bound));
        else
          a[0].push_back(bound);
      }
    return a;
  };
}

} // namespace

std::vector<Case> denseCases() {
  struct Shape {
    std::vector<int64_t> rows; // x is rows + [k]: [N] or, over the last axis, [N, ...]
    int64_t k, m;
    bool bias;
  };
  const std::vector<Shape> shapes = {{{1}, 13, 5, true},      {{7}, 33, 17, false},
                                     {{3}, 1, 7, true},       {{4}, 20, 1, true},
                                     {{2}, 64, 10, true},     {{2, 5}, 24, 9, true},
                                     {{3, 2, 4}, 16, 6, false}};
  std::vector<Case> cases;
  Rng rng{0xde45e};
  for (const Shape &s : shapes) {
    int64_t n = numel(s.rows);
    std::vector<int64_t> xd = s.rows, yd = s.rows;
    xd.push_back(s.k);
    yd.push_back(s.m);
    std::string l = "x=" + dimsText(xd) + " w=[" + std::to_string(s.m) + "," +
                    std::to_string(s.k) + "]" + (s.bias ? " +bias" : "");
    auto x = rng.values(n * s.k, -1, 1), w = rng.values(s.m * s.k, -1, 1);
    auto b = rng.values(s.m, -1, 1), dy = rng.values(n * s.m, -1, 1);
    std::vector<Operand> ops = {input("x", xd, x, true), param("w", {s.m, s.k}, w, true)};
    if (s.bias) ops.push_back(param("b", {s.m}, b, true));
    Case fwd = oneOp("dense", l, ops, s.bias ? "dense %x, @w, @b" : "dense %x, @w", {yd});
    fwd.magnitudeRun = true;
    fwd.tolerance = sumOfTerms(static_cast<double>(s.k + (s.bias ? 1 : 0)));
    cases.push_back(fwd);
    Case fused = fwd; // with a fused relu: the same bound, as for conv2d
    fused.label += " act=relu";
    fused.body = {std::string(s.bias ? "%0 = dense %x, @w, @b" : "%0 = dense %x, @w") +
                  " {act=\"relu\"} : " + typeText(yd)};
    cases.push_back(fused);
    // The other fused activations, on x scaled by 4 so that relu6 clips at both ends.
    std::vector<double> x4 = x;
    for (double &v : x4) v *= 4;
    for (const char *act : {"relu6", "sigmoid", "tanh"}) {
      Case c = fwd;
      c.label += std::string(" x*4 act=") + act;
      c.operands[0] = input("x", xd, x4);
      c.body = {std::string(s.bias ? "%0 = dense %x, @w, @b" : "%0 = dense %x, @w") + " {act=\"" +
                act + "\"} : " + typeText(yd)};
      c.magnitudeRun = false;
      c.tolerance = denseActivation(act, n, s.k, s.m, s.bias);
      cases.push_back(c);
    }

    Case bd = oneOp("dense_backward_data", l,
                    {input("dy", yd, dy, true), input("w", {s.m, s.k}, w, true)},
                    "dense_backward_data %dy, %w", {xd});
    bd.magnitudeRun = true;
    bd.tolerance = sumOfTerms(static_cast<double>(s.m));
    cases.push_back(bd);

    Case bw = oneOp("dense_backward_weights", l,
                    {input("dy", yd, dy, true), input("x", xd, x, true)},
                    "dense_backward_weights %dy, %x", {{s.m, s.k}});
    bw.magnitudeRun = true;
    bw.tolerance = sumOfTerms(static_cast<double>(n));
    cases.push_back(bw);

    Case bb = oneOp("dense_backward_bias", l, {input("dy", yd, dy, true)},
                    "dense_backward_bias %dy", {{s.m}});
    bb.magnitudeRun = true;
    bb.tolerance = sumOfTerms(static_cast<double>(n));
    cases.push_back(bb);
  }
  return cases;
}

} // namespace dtnn::test::diff
