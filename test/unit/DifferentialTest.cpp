// Differential tests: every kernel of every non-reference backend, forward
// and backward, against the reference backend on random shapes and
// attributes (fixed seeds), within bounds derived per op family from
// float32 error analysis (see Differential.h for how a case runs).
//
// Conventions of the bounds below. u = 2^-24 is the float32 unit roundoff
// (kU), eps = 2^-23 = 2u (kEps). gamma(n) = n*u / (1 - n*u) bounds the
// relative error of n chained roundings, and the error of a sum or dot
// product of n terms in ANY order (recursive, blocked, pairwise, with or
// without FMA) is at most gamma(n) * sum|terms| (Higham, "Accuracy and
// Stability of Numerical Algorithms", 2nd ed., section 3.1). We use this
// worst-case, K-style bound rather than the probabilistic sqrt(K) one: it
// holds for every summation order a backend may choose, so a failure is a
// real discrepancy, not bad luck. Both sides compute in float32, so every
// bound is the sum of a bound for the reference and one for the other
// backend. Where a sum's terms are products of operands, the sum of their
// absolute values is computed per output element by the magnitude run (the
// op on |operands| in double precision); elsewhere the magnitudes are
// computed here from the operands.
//
// Math functions. The reference calls glibc's float functions; glibc's
// manual ("Known Maximum Errors in Math Functions", x86_64) lists expf,
// logf and erff within 1 ulp and tanhf within 2 ulp, and 1 ulp <= 2u |f|.
// oneDNN (the only other CPU backend) documents no ulp bounds for its
// vectorized approximations; we assume the accuracy its own conformance
// tests accept for f32 (benchdnn's get_eltwise_threshold, softmax setup):
// relative 4e-6 for exp, logistic and gelu_erf, and 4e-5 for tanh,
// gelu_tanh, swish and log, applied to the magnitude of the function's
// terms. Arithmetic-only kernels (relu family, hard_*, scale, the binary
// ops, batchnorm's affine part) are assumed to evaluate the op's formula in
// IEEE float32 with the number of roundings stated at each op, in any
// algebraically equivalent order.
#include "Differential.h"

#include "RefRun.h"

#include "ir/ops/ShapeUtil.h"
#include "runtime/BackendRegistry.h"
#include "runtime/KernelRegistry.h"
#include "runtime/plan/Plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <set>
#include <sstream>

namespace dtnn::test {
namespace {

using namespace diff;
using Allowed = std::vector<std::vector<double>>;

double gamma(double n) { return n * kU / (1 - n * kU); }

// Math function accuracy, relative to the function's value (see the top).
constexpr double kRefExp = 2 * kU, kRefLog = 2 * kU, kRefErf = 2 * kU, kRefTanh = 4 * kU;
constexpr double kOtherExp = 4e-6, kOtherLogistic = 4e-6, kOtherGeluErf = 4e-6;
constexpr double kOtherTanh = 4e-5, kOtherGeluTanh = 4e-5, kOtherSwish = 4e-5, kOtherLog = 4e-5;

Operand input(std::string name, std::vector<int64_t> dims, std::vector<double> values,
              bool absInMagnitude = false) {
  Operand o;
  o.name = std::move(name);
  o.dims = std::move(dims);
  o.values = std::move(values);
  o.absInMagnitude = absInMagnitude;
  return o;
}

Operand param(std::string name, std::vector<int64_t> dims, std::vector<double> values,
              bool absInMagnitude = false) {
  Operand o = input(std::move(name), std::move(dims), std::move(values), absInMagnitude);
  o.isParam = true;
  return o;
}

int64_t numel(const std::vector<int64_t> &dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

// A one-op case: `line` is "op operands {attrs}"; its result types are
// appended, results are %0.. and all are returned.
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

std::string convAttrs(const std::vector<int64_t> &stride, const std::vector<int64_t> &pad,
                      const std::vector<int64_t> &dilation, int64_t groups) {
  return "{stride=" + intsText(stride) + ", pad=" + intsText(pad) +
         ", dilation=" + intsText(dilation) + ", groups=" + std::to_string(groups) + "}";
}

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
struct ConvGeom {
  int64_t n, c, h, w, k, kh, kw, sh, sw, pt, pl, pb, pr, dh, dw, groups;
  bool bias;

  int64_t oh() const { return ir::windowOutDim(h, kh, sh, pt, pb, dh, false); }
  int64_t ow() const { return ir::windowOutDim(w, kw, sw, pl, pr, dw, false); }
  std::vector<int64_t> x() const { return {n, c, h, w}; }
  std::vector<int64_t> wt() const { return {k, c / groups, kh, kw}; }
  std::vector<int64_t> y() const { return {n, k, oh(), ow()}; }
  std::string attrs() const { return convAttrs({sh, sw}, {pt, pl, pb, pr}, {dh, dw}, groups); }
  std::string label() const {
    return "x=" + dimsText(x()) + " w=" + dimsText(wt()) + (bias ? " +bias " : " ") + attrs();
  }
};

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
// each within 2 gamma(terms) * sum|terms| (magnitude run).
std::vector<Case> denseCases() {
  struct Shape {
    int64_t n, k, m;
    bool bias;
  };
  const std::vector<Shape> shapes = {
      {1, 13, 5, true}, {7, 33, 17, false}, {3, 1, 7, true}, {4, 20, 1, true}, {2, 64, 10, true}};
  std::vector<Case> cases;
  Rng rng{0xde45e};
  for (const Shape &s : shapes) {
    std::string l = "x=[" + std::to_string(s.n) + "," + std::to_string(s.k) + "] w=[" +
                    std::to_string(s.m) + "," + std::to_string(s.k) + "]" +
                    (s.bias ? " +bias" : "");
    auto x = rng.values(s.n * s.k, -1, 1), w = rng.values(s.m * s.k, -1, 1);
    auto b = rng.values(s.m, -1, 1), dy = rng.values(s.n * s.m, -1, 1);
    std::vector<Operand> ops = {input("x", {s.n, s.k}, x, true), param("w", {s.m, s.k}, w, true)};
    if (s.bias) ops.push_back(param("b", {s.m}, b, true));
    Case fwd = oneOp("dense", l, ops, s.bias ? "dense %x, @w, @b" : "dense %x, @w", {{s.n, s.m}});
    fwd.magnitudeRun = true;
    fwd.tolerance = sumOfTerms(static_cast<double>(s.k + (s.bias ? 1 : 0)));
    cases.push_back(fwd);

    Case bd = oneOp("dense_backward_data", l,
                    {input("dy", {s.n, s.m}, dy, true), input("w", {s.m, s.k}, w, true)},
                    "dense_backward_data %dy, %w", {{s.n, s.k}});
    bd.magnitudeRun = true;
    bd.tolerance = sumOfTerms(static_cast<double>(s.m));
    cases.push_back(bd);

    Case bw = oneOp("dense_backward_weights", l,
                    {input("dy", {s.n, s.m}, dy, true), input("x", {s.n, s.k}, x, true)},
                    "dense_backward_weights %dy, %x", {{s.m, s.k}});
    bw.magnitudeRun = true;
    bw.tolerance = sumOfTerms(static_cast<double>(s.n));
    cases.push_back(bw);

    Case bb = oneOp("dense_backward_bias", l, {input("dy", {s.n, s.m}, dy, true)},
                    "dense_backward_bias %dy", {{s.m}});
    bb.magnitudeRun = true;
    bb.tolerance = sumOfTerms(static_cast<double>(s.n));
    cases.push_back(bb);
  }
  return cases;
}

// ---------------------------------------------------------------------------
// Pooling: maxpool, maxpool_backward, avgpool, avgpool_backward,
// global_avgpool, global_avgpool_backward.
//   maxpool          a selection: exact.
//   maxpool_backward each dx element sums the dy of the windows whose first
//                    maximum it is, at most W = ceil(KH/SH) * ceil(KW/SW)
//                    windows: 2 gamma(W) * sum|dy| routed there (magnitude
//                    run on |dy| with the same x, so the same routing).
//   avgpool          a sum of at most KH*KW inputs and a division (or a
//                    product with a rounded reciprocal: 2 roundings):
//                    2 gamma(KH*KW + 1) * avgpool(|x|).
//   avgpool_backward each dx element sums at most W shares dy / divisor,
//                    each 1-2 roundings: 2 gamma(W + 1) * avgpool_backward(|dy|).
//   global_avgpool   2 gamma(H*W + 1) * global_avgpool(|x|).
//   global_avgpool_backward  one division or reciprocal product:
//                    2 gamma(2) * |dx|.
struct PoolGeom {
  int64_t n, c, h, w, kh, kw;
  std::vector<int64_t> stride; // empty: the kernel
  std::vector<int64_t> pad;    // top, left, bottom, right
  bool ceil;

  int64_t sh() const { return stride.empty() ? kh : stride[0]; }
  int64_t sw() const { return stride.empty() ? kw : stride[1]; }
  int64_t oh() const { return ir::windowOutDim(h, kh, sh(), pad[0], pad[2], 1, ceil); }
  int64_t ow() const { return ir::windowOutDim(w, kw, sw(), pad[1], pad[3], 1, ceil); }
  std::vector<int64_t> x() const { return {n, c, h, w}; }
  std::vector<int64_t> y() const { return {n, c, oh(), ow()}; }
  std::string attrs(const std::string &extra = "") const {
    std::string s = "{kernel=" + intsText({kh, kw});
    if (!stride.empty()) s += ", stride=" + intsText(stride);
    s += ", pad=" + intsText(pad);
    if (ceil) s += ", ceil=true";
    return s + extra + "}";
  }
  int64_t overlap() const { return ((kh + sh() - 1) / sh()) * ((kw + sw() - 1) / sw()); }
};

std::vector<Case> poolCases() {
  const std::vector<PoolGeom> geoms = {
      {1, 3, 7, 7, 3, 3, {2, 2}, {1, 1, 1, 1}, false},
      {2, 4, 13, 7, 2, 2, {}, {0, 0, 0, 0}, false},
      {1, 5, 13, 13, 3, 2, {1, 2}, {1, 0, 0, 1}, false}, // overlapping, asymmetric pad
      {2, 3, 9, 11, 3, 3, {3, 3}, {1, 1, 0, 1}, false},
      {2, 16, 6, 6, 2, 2, {2, 2}, {0, 0, 1, 1}, false}, // channels a multiple of the blocks
      {1, 2, 7, 7, 3, 3, {2, 2}, {1, 1, 1, 1}, true},   // ceil mode
      {2, 3, 8, 7, 2, 3, {2, 1}, {0, 1, 1, 1}, true},
  };
  std::vector<Case> cases;
  Rng rng{0x9001};
  for (size_t gi = 0; gi < geoms.size(); ++gi) {
    const PoolGeom &g = geoms[gi];
    std::string l = "x=" + dimsText(g.x()) + " " + g.attrs();
    auto x = rng.values(numel(g.x()), -2, 2), dy = rng.values(numel(g.y()), -1, 1);

    Case mp = oneOp("maxpool", l, {input("x", g.x(), x)}, "maxpool %x " + g.attrs(), {g.y()});
    mp.tolerance = exactly();
    cases.push_back(mp);

    Case mb = oneOp("maxpool_backward", l, {input("dy", g.y(), dy, true), input("x", g.x(), x)},
                    "maxpool_backward %dy, %x " + g.attrs(), {g.x()});
    mb.magnitudeRun = true;
    mb.tolerance = sumOfTerms(static_cast<double>(g.overlap()));
    cases.push_back(mb);

    // Ties: x in {-1, 0, 1} makes most windows hold several maxima, and the
    // gradient must go to the first one (row-major within the window).
    if (gi == 0 || gi == 2) {
      std::vector<double> ties(x.size());
      for (double &v : ties) v = static_cast<double>(rng.range(-1, 1));
      Case tb = mb;
      tb.label += " with ties";
      tb.operands[1].values = ties;
      cases.push_back(tb);
      Case tf = mp;
      tf.label += " with ties";
      tf.operands[0].values = ties;
      cases.push_back(tf);
    }

    for (bool cp : {true, false}) {
      std::string extra = cp ? "" : ", count_pad=false";
      std::string la = l + (cp ? "" : " count_pad=false");
      Case ap = oneOp("avgpool", la, {input("x", g.x(), x, true)}, "avgpool %x " + g.attrs(extra),
                      {g.y()});
      ap.magnitudeRun = true;
      ap.tolerance = sumOfTerms(static_cast<double>(g.kh * g.kw + 1));
      cases.push_back(ap);
      Case ab = oneOp("avgpool_backward", la, {input("dy", g.y(), dy, true), input("x", g.x(), x)},
                      "avgpool_backward %dy, %x " + g.attrs(extra), {g.x()});
      ab.magnitudeRun = true;
      ab.tolerance = sumOfTerms(static_cast<double>(g.overlap() + 1));
      cases.push_back(ab);
      if (g.pad == std::vector<int64_t>{0, 0, 0, 0}) break; // count_pad makes no difference
    }
  }
  for (std::vector<int64_t> xd :
       {std::vector<int64_t>{1, 3, 7, 7}, {2, 5, 13, 1}, {2, 4, 1, 1}, {2, 16, 5, 3}}) {
    std::vector<int64_t> yd = {xd[0], xd[1], 1, 1};
    auto x = rng.values(numel(xd), -2, 2), dy = rng.values(numel(yd), -1, 1);
    Case gp = oneOp("global_avgpool", "x=" + dimsText(xd), {input("x", xd, x, true)},
                    "global_avgpool %x", {yd});
    gp.magnitudeRun = true;
    gp.tolerance = sumOfTerms(static_cast<double>(xd[2] * xd[3] + 1));
    cases.push_back(gp);
    Case gb = oneOp("global_avgpool_backward", "x=" + dimsText(xd),
                    {input("dy", yd, dy, true), input("x", xd, x)},
                    "global_avgpool_backward %dy, %x", {xd});
    gb.tolerance = relative(2, 2);
    cases.push_back(gb);
  }
  return cases;
}

// ---------------------------------------------------------------------------
// Batch normalization: batchnorm (inference), batchnorm_train (with the
// running statistics read back), batchnorm_backward,
// batchnorm_backward_frozen, on [N,C] and [N,C,H,W] inputs. Inputs are
// viewed as [N,C,S]; per channel, count = N*S, mu and var are the batch
// mean and biased variance, E2 = mean(x^2), A1 = mean(|x|), computed here
// in double.
struct Channels {
  int64_t n, c, s;
  explicit Channels(const std::vector<int64_t> &dims) : n(dims[0]), c(dims[1]) {
    s = numel(dims) / (n * c);
  }
  int64_t count() const { return n * s; }
  template <typename F> void each(int64_t ch, F f) const {
    for (int64_t i = 0; i < n; ++i)
      for (int64_t k = 0; k < s; ++k) f((i * c + ch) * s + k);
  }
};

struct ChannelStats {
  double mu = 0, var = 0, e2 = 0, a1 = 0;
};

ChannelStats statsOf(const Channels &l, const std::vector<double> &x, int64_t ch) {
  ChannelStats st;
  double cnt = static_cast<double>(l.count());
  l.each(ch, [&](int64_t i) {
    st.mu += x[i];
    st.e2 += x[i] * x[i];
    st.a1 += std::abs(x[i]);
  });
  st.mu /= cnt, st.e2 /= cnt, st.a1 /= cnt;
  l.each(ch, [&](int64_t i) { st.var += (x[i] - st.mu) * (x[i] - st.mu); });
  st.var /= cnt;
  return st;
}

// x with a per-channel offset in [-2, 2] and spread in [0.5, 2], so that the
// statistics differ between channels and the mean is not small.
std::vector<double> channelData(Rng &rng, const std::vector<int64_t> &dims) {
  Channels l(dims);
  std::vector<double> x(static_cast<size_t>(numel(dims)));
  for (int64_t ch = 0; ch < l.c; ++ch) {
    double off = rng.uniform(-2, 2), spread = rng.uniform(0.5, 2);
    l.each(ch, [&](int64_t i) { x[i] = static_cast<float>(off + spread * rng.uniform(-1, 1)); });
  }
  return x;
}

// batchnorm: y = (x - mean) * gamma / sqrt(var + eps) + beta with given
// statistics. Along any evaluation (x - mean, var + eps, sqrt, division or
// reciprocal, the products with gamma and with x - mean, the sum with beta,
// or the reference's x * scale + (beta - mean * scale)) at most 8 roundings
// reach a term bounded by M = (|x| + |mean|) |gamma| / sqrt(var + eps) +
// |beta| (the reference's longest chain is 6.5u, a direct evaluation's 7.5u),
// so each side errs by at most gamma(8) * M.
Tolerance batchNormTolerance(std::vector<int64_t> dims, double eps) {
  return [dims, eps](const Eval &e) {
    Channels l(dims);
    const auto &x = e.values("x"), &g = e.values("g"), &b = e.values("b");
    const auto &rm = e.values("rm"), &rv = e.values("rv");
    Allowed a(1, std::vector<double>(x.size()));
    for (int64_t ch = 0; ch < l.c; ++ch) {
      double inv = 1 / std::sqrt(rv[ch] + eps);
      l.each(ch, [&](int64_t i) {
        double m = (std::abs(x[i]) + std::abs(rm[ch])) * std::abs(g[ch]) * inv + std::abs(b[ch]);
        a[0][i] = 2 * gamma(8) * m;
      });
    }
    return a;
  };
}

// batchnorm_train: outputs y, mean, invstd; running mean and variance read
// back.
//   Reference: statistics in double, rounded once (u), so mean and invstd
//     err by u |value| and the running statistics by u |new value|; y =
//     (x - m) * (gamma * invstd) + beta in float32 with m, invstd rounded:
//     at most gamma(6) * M_y, M_y = |gamma| invstd (|x - mu| + |mu|) + |beta|.
//   Other backend: float32 statistics. The mean is a sum of count terms and
//     a division: dMu = gamma(count + 1) A1. The variance, whether two-pass
//     (sum of (x - m)^2) or one-pass (E[x^2] - m^2), errs by at most
//     dVar = gamma(count + 4) E2 (the one-pass form is the worse, its terms
//     are bounded by E2). invstd = 1/sqrt(var + eps) then errs relatively
//     by rInv = dVar / (2 (var + eps)) + gamma(3) (add, sqrt, division).
//     y errs by |gamma| invstd (dMu + |x - mu| rInv) + gamma(4) M_y (x - m,
//     two products, the sum). Running statistics r' = (1 - mom) r + mom s:
//     mom dS + gamma(3 or 4) ((1 - mom)|r| + mom |s|), with s the mean, or
//     the unbiased variance var * count / (count - 1).
Tolerance batchNormTrainTolerance(std::vector<int64_t> dims, double eps, double mom) {
  return [dims, eps, mom](const Eval &e) {
    Channels l(dims);
    const auto &x = e.values("x"), &g = e.values("g"), &b = e.values("b");
    const auto &rm = e.values("rm"), &rv = e.values("rv");
    Allowed a = {std::vector<double>(x.size()), std::vector<double>(l.c), std::vector<double>(l.c),
                 std::vector<double>(l.c), std::vector<double>(l.c)};
    double cnt = static_cast<double>(l.count());
    for (int64_t ch = 0; ch < l.c; ++ch) {
      ChannelStats st = statsOf(l, x, ch);
      double inv = 1 / std::sqrt(st.var + eps);
      double dMu = gamma(cnt + 1) * st.a1, dVar = gamma(cnt + 4) * st.e2;
      double rInv = dVar / (2 * (st.var + eps)) + gamma(3);
      l.each(ch, [&](int64_t i) {
        double dev = std::abs(x[i] - st.mu);
        double my = std::abs(g[ch]) * inv * (dev + std::abs(st.mu)) + std::abs(b[ch]);
        a[0][i] = gamma(6) * my + std::abs(g[ch]) * inv * (dMu + dev * rInv) + gamma(4) * my;
      });
      a[1][ch] = gamma(1) * std::abs(st.mu) + dMu;
      a[2][ch] = (gamma(1) + rInv) * inv;
      double newMean = (1 - mom) * rm[ch] + mom * st.mu;
      a[3][ch] = gamma(1) * std::abs(newMean) + mom * dMu +
                 gamma(3) * ((1 - mom) * std::abs(rm[ch]) + mom * std::abs(st.mu));
      double unbiasing = cnt / (cnt - 1); // count > 1, as the op requires
      double unbiased = st.var * unbiasing;
      double newVar = (1 - mom) * rv[ch] + mom * unbiased;
      a[4][ch] = gamma(1) * std::abs(newVar) + mom * unbiasing * dVar +
                 gamma(4) * ((1 - mom) * std::abs(rv[ch]) + mom * unbiased);
    }
    return a;
  };
}

// batchnorm_backward from the batch mean m and invstd (inputs), with
// xh = (x - m) invstd, B = sum|dy|, G = sum|dy xh| per channel:
//   dbeta = sum dy: reference in double (u), other count terms in float32:
//     gamma(count + 1) B.
//   dgamma = sum dy xh: reference terms are 3 float32 roundings each plus
//     one at the end; the other backend recomputes invstd from a variance
//     (1/invstd^2 - eps, then 1/sqrt(var + eps): about 5u) and sums count
//     terms of 8 roundings: together gamma(count + 12) G.
//   dx = gamma invstd (dy - dbeta/count - xh dgamma/count): with
//     M = |gamma| invstd (|dy| + B/count + |xh| G/count), the reference errs
//     by at most 10u M (its chains of roundings over each term) and the
//     other backend by (count + 26)u M (its float32 sums enter through
//     dbeta/count and dgamma/count): gamma(count + 36) M.
Tolerance batchNormBackwardTolerance(std::vector<int64_t> dims) {
  return [dims](const Eval &e) {
    Channels l(dims);
    const auto &dy = e.values("dy"), &x = e.values("x"), &g = e.values("g");
    const auto &m = e.values("mean"), &inv = e.values("invstd");
    Allowed a = {std::vector<double>(x.size()), std::vector<double>(l.c), std::vector<double>(l.c)};
    double cnt = static_cast<double>(l.count());
    for (int64_t ch = 0; ch < l.c; ++ch) {
      double bsum = 0, gsum = 0;
      l.each(ch, [&](int64_t i) {
        bsum += std::abs(dy[i]);
        gsum += std::abs(dy[i] * (x[i] - m[ch]) * inv[ch]);
      });
      l.each(ch, [&](int64_t i) {
        double xh = std::abs((x[i] - m[ch]) * inv[ch]);
        double mm = std::abs(g[ch]) * inv[ch] * (std::abs(dy[i]) + bsum / cnt + xh * gsum / cnt);
        a[0][i] = gamma(cnt + 36) * mm;
      });
      a[1][ch] = gamma(cnt + 12) * gsum;
      a[2][ch] = gamma(cnt + 1) * bsum;
    }
    return a;
  };
}

// batchnorm_backward_frozen with fixed statistics (mean, var): dx = dy gamma
// invstd is 5.5u per side (add, sqrt, division, two products): gamma(12)
// |dx| for both; dgamma = sum dy (x - mean) invstd has terms of 6.5u per side
// and one float32 sum of count terms: gamma(count + 14) G; dbeta as above.
Tolerance batchNormFrozenTolerance(std::vector<int64_t> dims, double eps) {
  return [dims, eps](const Eval &e) {
    Channels l(dims);
    const auto &dy = e.values("dy"), &x = e.values("x"), &g = e.values("g");
    const auto &m = e.values("mean"), &var = e.values("var");
    Allowed a = {std::vector<double>(x.size()), std::vector<double>(l.c), std::vector<double>(l.c)};
    double cnt = static_cast<double>(l.count());
    for (int64_t ch = 0; ch < l.c; ++ch) {
      double inv = 1 / std::sqrt(var[ch] + eps), bsum = 0, gsum = 0;
      l.each(ch, [&](int64_t i) {
        bsum += std::abs(dy[i]);
        gsum += std::abs(dy[i] * (x[i] - m[ch]) * inv);
        a[0][i] = gamma(12) * std::abs(dy[i] * g[ch] * inv);
      });
      a[1][ch] = gamma(cnt + 14) * gsum;
      a[2][ch] = gamma(cnt + 1) * bsum;
    }
    return a;
  };
}

std::vector<Case> batchNormCases() {
  std::vector<Case> cases;
  Rng rng{0xb47c4};
  // Batch 1 only with a spatial size: batchnorm_train needs more than one
  // value per channel.
  const std::vector<std::vector<int64_t>> shapes = {{7, 5}, {2, 3, 7, 5}, {1, 4, 13, 3}, {2, 3}};
  for (size_t si = 0; si < shapes.size(); ++si) {
    const std::vector<int64_t> &xd = shapes[si];
    int64_t c = xd[1];
    std::string l = "x=" + dimsText(xd);
    auto x = channelData(rng, xd), dy = rng.values(numel(xd), -1, 1);
    auto g = rng.values(c, -1.5, 1.5), b = rng.values(c, -1, 1);
    auto rm = rng.values(c, -1, 1), rv = rng.values(c, 0.5, 2);
    double eps = si == 1 ? 1e-3 : 1e-5, mom = si == 1 ? 0.3 : 0.1;
    std::string epsAttr = "eps=" + floatText(eps);
    auto buffer = [](Operand o, bool readBack) {
      o.isBuffer = true;
      o.readBack = readBack;
      return o;
    };
    std::string cv = dimsText({c});

    Case inf = oneOp("batchnorm", l + " " + epsAttr,
                     {input("x", xd, x), param("g", {c}, g), param("b", {c}, b),
                      buffer(param("rm", {c}, rm), false), buffer(param("rv", {c}, rv), false)},
                     "batchnorm %x, @g, @b, @rm, @rv {" + epsAttr + "}", {xd});
    inf.tolerance = batchNormTolerance(xd, eps);
    cases.push_back(inf);

    // batchnorm_train yields the new running statistics as results 3 and 4;
    // the graph returns y, mean and invstd, and the statistics are read back.
    Case tr;
    tr.op = "batchnorm_train";
    tr.label = l + " " + epsAttr + " momentum=" + floatText(mom);
    tr.operands = {input("x", xd, x), param("g", {c}, g), param("b", {c}, b),
                   buffer(param("rm", {c}, rm), true), buffer(param("rv", {c}, rv), true)};
    tr.body = {"%0, %1, %2, %3, %4 = batchnorm_train %x, @g, @b, @rm, @rv {" + epsAttr +
               ", momentum=" + floatText(mom) + "} : " + typeText(xd) + ", $T" + cv + ", $T" + cv +
               ", $T" + cv + ", $T" + cv};
    tr.results = {"%0", "%1", "%2"};
    tr.resultDims = {xd, {c}, {c}};
    tr.tolerance = batchNormTrainTolerance(xd, eps, mom);
    cases.push_back(tr);

    // The backward ops take the statistics a forward pass would have made.
    Channels ch(xd);
    std::vector<double> mean(c), invstd(c);
    for (int64_t k = 0; k < c; ++k) {
      ChannelStats st = statsOf(ch, x, k);
      mean[k] = static_cast<float>(st.mu);
      invstd[k] = static_cast<float>(1 / std::sqrt(st.var + eps));
    }
    Case bw = oneOp("batchnorm_backward", l,
                    {input("dy", xd, dy), input("x", xd, x), input("g", {c}, g),
                     input("mean", {c}, mean), input("invstd", {c}, invstd)},
                    "batchnorm_backward %dy, %x, %g, %mean, %invstd", {xd, {c}, {c}});
    bw.tolerance = batchNormBackwardTolerance(xd);
    cases.push_back(bw);

    Case fz = oneOp("batchnorm_backward_frozen", l + " " + epsAttr,
                    {input("dy", xd, dy), input("x", xd, x), input("g", {c}, g),
                     input("mean", {c}, rm), input("var", {c}, rv)},
                    "batchnorm_backward_frozen %dy, %x, %g, %mean, %var {" + epsAttr + "}",
                    {xd, {c}, {c}});
    fz.tolerance = batchNormFrozenTolerance(xd, eps);
    cases.push_back(fz);
  }
  return cases;
}

// ---------------------------------------------------------------------------
// Activations and other unary elementwise ops, forward and backward: relu,
// relu6, leaky_relu, sigmoid, tanh, silu, gelu (erf and tanh forms),
// hard_sigmoid, hard_swish, their *_backward, and scale. Each bound is the
// reference's error plus the other backend's at one element, derived at
// each op below from the formula the reference evaluates (the backend's
// either its own arithmetic or the accuracy assumed at the top for its math
// functions), relative to a magnitude M of the formula's terms that covers
// cancellation (a relative bound alone would not hold where the terms
// cancel: gelu's 1 + erf for x << 0, silu's 1 + x (1 - s) near x = -1.28).
//
// The backward ops take the forward input x (relu, relu6, leaky_relu, silu,
// gelu, hard_*) or the forward result y (sigmoid, tanh), generated from
// random x as the forward op would.
constexpr double kSqrtHalf = 0.70710678118654752440;
constexpr double kSqrt2OverPi = 0.79788456080286535588;
constexpr double kGeluKappa = 0.044715;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;

double sigmoidOf(double x) { return 1 / (1 + std::exp(-x)); }

struct Unary {
  std::string op, attrs;
  bool backward = false;
  bool fromResult = false;               // the backward op takes y rather than x
  double lo = -8, hi = 8;                // x
  std::function<double(double)> forward; // y from x, for the fromResult backward ops
  // The allowed |a - b| at one element from x (or y) and dy (1 forward).
  std::function<double(double, double)> bound;
};

std::vector<Unary> unaryOps() {
  std::vector<Unary> u;
  auto fwd = [&](std::string op, std::string attrs, std::function<double(double, double)> b) {
    Unary o;
    o.op = std::move(op), o.attrs = std::move(attrs), o.bound = std::move(b);
    u.push_back(o);
  };
  auto bwd = [&](std::string op, std::string attrs, std::function<double(double, double)> b) {
    fwd(std::move(op), std::move(attrs), std::move(b));
    u.back().backward = true;
  };
  // relu, relu6: selections of x or a constant, exact; their gradients
  // select dy or 0, exact.
  fwd("relu", "", [](double, double) { return 0.0; });
  fwd("relu6", "", [](double, double) { return 0.0; });
  bwd("relu_backward", "", [](double, double) { return 0.0; });
  bwd("relu6_backward", "", [](double, double) { return 0.0; });
  // leaky_relu: x or alpha x, one rounding per side: 2 gamma(1) |y|; the
  // gradient dy or alpha dy likewise.
  for (double alpha : {0.01, 0.2}) {
    std::string at = alpha == 0.01 ? "" : "{alpha=" + floatText(alpha) + "}";
    float al = static_cast<float>(alpha);
    fwd("leaky_relu", at,
        [al](double x, double) { return 2 * gamma(1) * std::abs(x > 0 ? x : al * x); });
    bwd("leaky_relu_backward", at,
        [al](double x, double dy) { return 2 * gamma(1) * std::abs(x > 0 ? dy : al * dy); });
  }
  // sigmoid 1/(1 + exp(-x)): the reference's expf (1 ulp = 2u), the sum and
  // the division: kRefExp + gamma(2) relative; the other backend's logistic
  // kOtherLogistic relative.
  fwd("sigmoid", "",
      [](double x, double) { return (kRefExp + gamma(2) + kOtherLogistic) * sigmoidOf(x); });
  // sigmoid_backward dy y (1 - y): three roundings in any order of
  // dy*y*(1-y) or dy*(y - y*y), each on a term at most M = |dy| y.
  bwd("sigmoid_backward", "", [](double y, double dy) { return 2 * gamma(3) * std::abs(dy) * y; });
  u.back().fromResult = true;
  u.back().forward = sigmoidOf;
  // tanh: tanhf is within 2 ulp (4u); the other backend's kOtherTanh.
  fwd("tanh", "",
      [](double x, double) { return (kRefTanh + kOtherTanh) * std::abs(std::tanh(x)); });
  // tanh_backward dy (1 - y^2): y*y, 1 - y^2 (or (1 - y)(1 + y)), the
  // product with dy: 3 to 4 roundings on terms at most M = |dy| (y^2 +
  // |1 - y^2|).
  bwd("tanh_backward", "", [](double y, double dy) {
    return (gamma(3) + gamma(4)) * std::abs(dy) * (y * y + std::abs(1 - y * y));
  });
  u.back().fromResult = true;
  u.back().forward = [](double x) { return std::tanh(x); };
  u.back().lo = -4, u.back().hi = 4;
  // silu x s(x): the reference's sigmoid and one product: kRefExp +
  // gamma(3) relative; the other backend's swish kOtherSwish.
  fwd("silu", "", [](double x, double) {
    return (kRefExp + gamma(3) + kOtherSwish) * std::abs(x * sigmoidOf(x));
  });
  // silu_backward dy s (1 + x (1 - s)): the reference's s errs by kRefExp +
  // 2u relative and |d/ds| <= 1 + |x|; the five further roundings add at
  // most u M each, M = |dy| s (1 + |x|): (kRefExp + 7u) M; the other
  // backend's swish gradient kOtherSwish M.
  bwd("silu_backward", "", [](double x, double dy) {
    double m = std::abs(dy) * sigmoidOf(x) * (1 + std::abs(x));
    return (kRefExp + 7 * kU + kOtherSwish) * m;
  });
  // gelu (erf) 0.5 x (1 + erf(x / sqrt 2)): with M = 0.5 |x| (1 + |erf|),
  // the argument's rounding moves erf by at most 0.49u, erff errs by
  // kRefErf |erf|, the sum by u |1 + erf| and the product by u |y|: at most
  // (kRefErf + 2u) M for the reference; kOtherGeluErf M for the other.
  fwd("gelu", "", [](double x, double) {
    double m = 0.5 * std::abs(x) * (1 + std::abs(std::erf(x * kSqrtHalf)));
    return (kRefErf + 2 * kU + kOtherGeluErf) * m;
  });
  // gelu_backward (erf) dy (cdf + x pdf): cdf's error is absolute (at most
  // 3.25u, from 1 + erf), pdf's relative (0.5 x^2 u from the argument, expf,
  // one product), then a sum and a product: at most 6u M with M = |dy| (1 +
  // |x| pdf (1 + x^2)) for the reference; kOtherGeluErf M for the other.
  bwd("gelu_backward", "", [](double x, double dy) {
    double pdf = kInvSqrt2Pi * std::exp(-0.5 * x * x);
    double m = std::abs(dy) * (1 + std::abs(x) * pdf * (1 + x * x));
    return (6 * kU + kOtherGeluErf) * m;
  });
  // gelu (tanh) 0.5 x (1 + tanh(k1 (x + k2 x^3))): the inner argument errs
  // by 5u relative (its terms share a sign), moving tanh by at most 2.25u;
  // tanhf kRefTanh |t|, the sum u |1 + t|, the product u |y|: at most
  // (kRefTanh + 2u) M with M = 0.5 |x| (1 + |t|); kOtherGeluTanh M for the
  // other backend.
  fwd("gelu", "{approximate=\"tanh\"}", [](double x, double) {
    double t = std::tanh(kSqrt2OverPi * (x + kGeluKappa * x * x * x));
    return (kRefTanh + 2 * kU + kOtherGeluTanh) * 0.5 * std::abs(x) * (1 + std::abs(t));
  });
  // gelu_backward (tanh) dy (0.5 (1 + t) + 0.5 x (1 - t^2) k1 (1 + 3 k2 x^2)):
  // t errs by at most 6.25u, 1 - t^2 by 14.5u absolutely, the derivative of
  // the argument by 4u relative: at most 12u M with M = |dy| (1 + |x|
  // k1 (1 + 3 k2 x^2)) for the reference; kOtherGeluTanh M for the other.
  bwd("gelu_backward", "{approximate=\"tanh\"}", [](double x, double dy) {
    double dInner = kSqrt2OverPi * (1 + 3 * kGeluKappa * x * x);
    return (12 * kU + kOtherGeluTanh) * std::abs(dy) * (1 + std::abs(x) * dInner);
  });
  // hard_sigmoid relu6(x + 3) / 6: the reference rounds x + 3 and the
  // division (gamma(2)); a backend computing x * (1/6) + 0.5 rounds the
  // constant, the product and the sum (gamma(3)); all relative to M =
  // (|x| + 3) / 6 inside (-3, 3), 1 above, 0 below.
  fwd("hard_sigmoid", "", [](double x, double) {
    double m = x <= -3 ? 0 : x >= 3 ? 1 : (std::abs(x) + 3) / 6;
    return (gamma(2) + gamma(3)) * m;
  });
  // hard_sigmoid_backward dy / 6 inside (-3, 3), else 0: one rounding, or
  // two with a rounded reciprocal.
  bwd("hard_sigmoid_backward", "", [](double x, double dy) {
    return x > -3 && x < 3 ? (gamma(1) + gamma(2)) * std::abs(dy) / 6 : 0.0;
  });
  // hard_swish x relu6(x + 3) / 6: inside (-3, 3) M = |x| (|x| + |x + 3|) / 6
  // bounds every intermediate of x (x + 3) / 6 and of x (x / 6 + 0.5); the
  // reference rounds 3 times, another order (with a rounded 1/6) 4 times;
  // above 3 the result is x (times 6 * (1/6) at most 3 roundings), below -3
  // exactly 0.
  fwd("hard_swish", "", [](double x, double) {
    double m = x <= -3  ? 0
               : x >= 3 ? std::abs(x)
                        : std::abs(x) * (std::abs(x) + std::abs(x + 3)) / 6;
    return (gamma(3) + gamma(4)) * m;
  });
  // hard_swish_backward: 0 below -3, dy (x / 3 + 0.5) up to 3 (PyTorch's
  // convention at the kinks), dy above: x / 3, the sum and the product
  // (gamma(3)) or with rounded constants (gamma(4)) on M = |dy| (|x|/3 + 0.5).
  bwd("hard_swish_backward", "", [](double x, double dy) {
    return x < -3 || x > 3 ? 0.0 : (gamma(3) + gamma(4)) * std::abs(dy) * (std::abs(x) / 3 + 0.5);
  });
  // scale x * factor: one rounding per side, 2 gamma(1) |y|.
  for (double f : {0.37, -2.5}) {
    fwd("scale", "{factor=" + floatText(f) + "}",
        [f](double x, double) { return 2 * gamma(1) * std::abs(x * static_cast<float>(f)); });
  }
  return u;
}

std::vector<Case> activationCases() {
  std::vector<Case> cases;
  Rng rng{0xac7};
  const std::vector<std::vector<int64_t>> shapes = {{7, 13}, {2, 3, 7, 5}, {2, 16, 3, 3}};
  // Kinks and breakpoints: relu's 0, relu6's 0 and 6, hard_*'s -3 and 3,
  // hard_swish's gradient zero -1.5, written into the first elements.
  const std::vector<double> kinks = {0, 6, -3, 3, -1.5, -0.0, 1e-3, -1e-3};
  for (const Unary &u : unaryOps()) {
    for (size_t si = 0; si < shapes.size(); ++si) {
      const auto &dims = shapes[si];
      auto x = rng.values(numel(dims), u.lo, u.hi);
      if (si == 1 && !u.fromResult)
        for (size_t i = 0; i < kinks.size(); ++i) x[i] = kinks[i];
      std::string l = "x=" + dimsText(dims) + (u.attrs.empty() ? "" : " " + u.attrs) +
                      (si == 1 && !u.fromResult ? " with kinks" : "");
      std::string at = u.attrs.empty() ? "" : " " + u.attrs;
      Case c;
      std::vector<double> s = x; // what the bound reads: x, or y for fromResult
      if (!u.backward) {
        c = oneOp(u.op, l, {input("x", dims, x)}, u.op + " %x" + at, {dims});
        auto bound = u.bound;
        c.tolerance = [bound, s](const Eval &) {
          Allowed a(1);
          for (double v : s) a[0].push_back(bound(v, 1));
          return a;
        };
      } else {
        if (u.fromResult)
          for (double &v : s) v = static_cast<float>(u.forward(v));
        auto dy = rng.values(numel(dims), -1, 1);
        std::string sn = u.fromResult ? "y" : "x";
        c = oneOp(u.op, l, {input("dy", dims, dy), input(sn, dims, s)}, u.op + " %dy, %" + sn + at,
                  {dims});
        auto bound = u.bound;
        c.tolerance = [bound, s, dy](const Eval &) {
          Allowed a(1);
          for (size_t i = 0; i < s.size(); ++i) a[0].push_back(bound(s[i], dy[i]));
          return a;
        };
      }
      cases.push_back(c);
    }
  }
  return cases;
}

// ---------------------------------------------------------------------------
// Softmax: softmax, log_softmax and their backward ops along various axes.
// Along the axis (n elements, max m, D = max |x_k - m|, S = sum exp(x_k - m)),
// per side with E its exp's relative error and L its log's:
//   softmax      y_k = e_k / S: x_k - m rounds (u D absolute, so u D
//                relative in e_k), exp adds E, the sum of n positive terms
//                gamma(n - 1), the division or reciprocal product 1-2u:
//                |y_k| (u (2D + n + 1) + 2E) relative.
//   log_softmax  y_k = x_k - m - log S: log S errs by the relative error of
//                S (u D + E + (n - 1) u) plus L |log S|, and the additions by
//                u (D + |m| + |log S| + |y_k|) in either order:
//                u (2D + n + |m| + |log S| + |y_k|) + E + L |log S|.
//   softmax_backward dx = y (dy - sum dy y): the dot product gamma(n) P with
//                P = sum |dy_j y_j|, then two roundings: gamma(n + 2) |y_k| (|dy_k| + P).
//   log_softmax_backward dx = dy - exp(y) sum dy: the sum gamma(n - 1) Q with
//                Q = sum |dy_j|, exp E, two roundings:
//                gamma(n + 1) (|dy_k| + e^y_k Q) + E e^y_k Q.
struct AxisSplit {
  int64_t outer = 1, n = 1, inner = 1;
  AxisSplit(const std::vector<int64_t> &dims, int64_t axis) {
    int64_t r = static_cast<int64_t>(dims.size());
    if (axis < 0) axis += r;
    for (int64_t d = 0; d < r; ++d) (d < axis ? outer : d == axis ? n : inner) *= dims[d];
  }
  // Calls f(indices along the axis) for every row.
  template <typename F> void rows(F f) const {
    std::vector<int64_t> idx(n);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j = 0; j < inner; ++j) {
        for (int64_t k = 0; k < n; ++k) idx[k] = (o * n + k) * inner + j;
        f(idx);
      }
  }
};

std::vector<Case> softmaxCases() {
  struct Shape {
    std::vector<int64_t> dims;
    int64_t axis;
    double lo, hi;
  };
  const std::vector<Shape> shapes = {
      {{7, 13}, -1, -5, 5},      {{7, 13}, 0, -5, 5},    {{2, 5, 3, 7}, 1, -5, 5},
      {{2, 5, 3, 7}, -1, -5, 5}, {{1, 13, 7}, 1, -5, 5}, {{3, 4, 5}, 2, -5, 5},
      {{5, 9}, -1, 40, 60}, // large values: the max must be subtracted
      {{2, 16, 3}, 1, -5, 5}};
  std::vector<Case> cases;
  Rng rng{0x50f7};
  for (const Shape &sh : shapes) {
    AxisSplit split(sh.dims, sh.axis);
    double nn = static_cast<double>(split.n);
    std::string at = sh.axis == -1 ? "" : " {axis=" + std::to_string(sh.axis) + "}";
    std::string l = "x=" + dimsText(sh.dims) + " axis=" + std::to_string(sh.axis);
    auto x = rng.values(numel(sh.dims), sh.lo, sh.hi);
    auto dy = rng.values(numel(sh.dims), -1, 1);
    // The forward results in double, rounded: valid y operands of the
    // backward ops.
    std::vector<double> ys(x.size()), yl(x.size());
    split.rows([&](const std::vector<int64_t> &idx) {
      double m = -INFINITY, s = 0;
      for (int64_t i : idx) m = std::max(m, x[i]);
      for (int64_t i : idx) s += std::exp(x[i] - m);
      for (int64_t i : idx) {
        ys[i] = static_cast<float>(std::exp(x[i] - m) / s);
        yl[i] = static_cast<float>(x[i] - m - std::log(s));
      }
    });

    Case sm = oneOp("softmax", l, {input("x", sh.dims, x)}, "softmax %x" + at, {sh.dims});
    sm.tolerance = [split, x, nn](const Eval &e) {
      Allowed a(1, std::vector<double>(x.size()));
      split.rows([&](const std::vector<int64_t> &idx) {
        double m = -INFINITY, d = 0;
        for (int64_t i : idx) m = std::max(m, x[i]);
        for (int64_t i : idx) d = std::max(d, m - x[i]);
        for (int64_t i : idx)
          a[0][i] =
              std::abs(e.exact[0][i]) * (2 * kU * (2 * d + nn + 1) + 2 * kRefExp + 2 * kOtherExp);
      });
      return a;
    };
    cases.push_back(sm);

    Case ls = oneOp("log_softmax", l, {input("x", sh.dims, x)}, "log_softmax %x" + at, {sh.dims});
    ls.tolerance = [split, x, nn](const Eval &e) {
      Allowed a(1, std::vector<double>(x.size()));
      split.rows([&](const std::vector<int64_t> &idx) {
        double m = -INFINITY, d = 0, s = 0;
        for (int64_t i : idx) m = std::max(m, x[i]);
        for (int64_t i : idx) d = std::max(d, m - x[i]), s += std::exp(x[i] - m);
        double logS = std::abs(std::log(s));
        for (int64_t i : idx)
          a[0][i] = 2 * kU * (2 * d + nn + std::abs(m) + logS + std::abs(e.exact[0][i])) + kRefExp +
                    kOtherExp + (kRefLog + kOtherLog) * logS;
      });
      return a;
    };
    cases.push_back(ls);

    Case sb = oneOp("softmax_backward", l, {input("dy", sh.dims, dy), input("y", sh.dims, ys)},
                    "softmax_backward %dy, %y" + at, {sh.dims});
    sb.tolerance = [split, dy, ys, nn](const Eval &) {
      Allowed a(1, std::vector<double>(dy.size()));
      split.rows([&](const std::vector<int64_t> &idx) {
        double p = 0;
        for (int64_t i : idx) p += std::abs(dy[i] * ys[i]);
        for (int64_t i : idx) a[0][i] = 2 * gamma(nn + 2) * std::abs(ys[i]) * (std::abs(dy[i]) + p);
      });
      return a;
    };
    cases.push_back(sb);

    Case lb = oneOp("log_softmax_backward", l, {input("dy", sh.dims, dy), input("y", sh.dims, yl)},
                    "log_softmax_backward %dy, %y" + at, {sh.dims});
    lb.tolerance = [split, dy, yl, nn](const Eval &) {
      Allowed a(1, std::vector<double>(dy.size()));
      split.rows([&](const std::vector<int64_t> &idx) {
        double q = 0;
        for (int64_t i : idx) q += std::abs(dy[i]);
        for (int64_t i : idx) {
          double ey = std::exp(yl[i]);
          a[0][i] = 2 * gamma(nn + 1) * (std::abs(dy[i]) + ey * q) + (kRefExp + kOtherExp) * ey * q;
        }
      });
      return a;
    };
    cases.push_back(lb);
  }
  return cases;
}

// ---------------------------------------------------------------------------
// Binary elementwise ops with numpy broadcasting, both operand orders: add,
// sub, mul, div. Each side rounds the exact result once (add, sub, mul and
// an IEEE division): 2 gamma(1) |exact|; a division by multiplying with a
// rounded reciprocal rounds twice: gamma(1) + gamma(2). The f64 run's
// results are exact for add, sub and mul of these float32 values and within
// 2^-53 relative for div.
std::vector<Case> binaryCases() {
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> shapes = {
      {{7, 13}, {7, 13}},
      {{7, 13}, {13}},
      {{2, 3, 5, 7}, {3, 1, 1}},
      {{2, 3, 5, 7}, {1}},
      {{5, 1, 7}, {1, 3, 1}},
      {{7, 13}, {}},
      {{2, 16, 3, 3}, {1, 16, 1, 1}},
      {{2, 3, 5, 7}, {2, 3, 5, 7}}};
  std::vector<Case> cases;
  Rng rng{0xb1a};
  for (const char *op : {"add", "sub", "mul", "div"}) {
    bool isDiv = std::string(op) == "div";
    for (const auto &[da, db] : shapes) {
      for (bool swap : {false, true}) {
        if (swap && da == db) continue;
        std::vector<int64_t> a = swap ? db : da, b = swap ? da : db;
        std::vector<int64_t> out = *ir::broadcastDims(a, b);
        auto va = rng.values(numel(a), -2, 2);
        auto vb = rng.values(numel(b), isDiv ? 0.5 : -2, 2);
        if (isDiv)
          for (double &v : vb) v = rng.chance(0.5) ? -v : v;
        Case c = oneOp(op, "a=" + dimsText(a) + " b=" + dimsText(b),
                       {input("a", a, va), input("b", b, vb)}, std::string(op) + " %a, %b", {out});
        c.tolerance = isDiv ? relative(1, 2) : relative(1, 1);
        cases.push_back(c);
      }
    }
  }
  return cases;
}

// ---------------------------------------------------------------------------
// concat of 2 or 3 inputs, mostly along axis 1: copies, exact.
std::vector<Case> concatCases() {
  struct Shape {
    std::vector<std::vector<int64_t>> in;
    int64_t axis;
  };
  const std::vector<Shape> shapes = {
      {{{2, 3, 5, 7}, {2, 4, 5, 7}}, 1},
      {{{2, 3, 5, 7}, {2, 1, 5, 7}, {2, 6, 5, 7}}, 1},
      {{{1, 16, 3, 3}, {1, 8, 3, 3}, {1, 16, 3, 3}}, 1},
      {{{7, 3}, {7, 13}}, 1},
      {{{1, 5, 7}, {1, 2, 7}, {1, 3, 7}}, 1},
      {{{3, 5}, {4, 5}}, 0},
      {{{2, 3, 4}, {2, 3, 1}}, -1},
  };
  std::vector<Case> cases;
  Rng rng{0xc047};
  for (const Shape &s : shapes) {
    int64_t r = static_cast<int64_t>(s.in[0].size());
    int64_t axis = s.axis < 0 ? s.axis + r : s.axis;
    std::vector<int64_t> out = s.in[0];
    out[axis] = 0;
    std::vector<Operand> ops;
    std::string line = "concat", label;
    for (size_t i = 0; i < s.in.size(); ++i) {
      out[axis] += s.in[i][axis];
      std::string name = std::string(1, static_cast<char>('a' + i));
      ops.push_back(input(name, s.in[i], rng.values(numel(s.in[i]), -2, 2)));
      line += (i ? ", %" : " %") + name;
      label += (i ? " + " : "") + dimsText(s.in[i]);
    }
    line += " {axis=" + std::to_string(s.axis) + "}";
    Case c = oneOp("concat", label + " axis=" + std::to_string(s.axis), ops, line, {out});
    c.tolerance = exactly();
    cases.push_back(c);
  }
  return cases;
}

std::vector<Case> allCases() {
  std::vector<Case> all;
  for (auto gen : {convCases, denseCases, poolCases, batchNormCases, activationCases, softmaxCases,
                   binaryCases, concatCases}) {
    std::vector<Case> cs = gen();
    all.insert(all.end(), cs.begin(), cs.end());
  }
  return all;
}

void runFamily(const std::string &family, const std::vector<Case> &cases) {
  Report report(family);
  for (const Case &c : cases) checkCase(c, report);
  report.print();
  report.expectEveryClaimRan();
}

TEST(Differential, Conv) { runFamily("Conv", convCases()); }
TEST(Differential, Dense) { runFamily("Dense", denseCases()); }
TEST(Differential, Pool) { runFamily("Pool", poolCases()); }
TEST(Differential, BatchNorm) { runFamily("BatchNorm", batchNormCases()); }
TEST(Differential, Activation) { runFamily("Activation", activationCases()); }
TEST(Differential, Softmax) { runFamily("Softmax", softmaxCases()); }
TEST(Differential, Binary) { runFamily("Binary", binaryCases()); }
TEST(Differential, Concat) { runFamily("Concat", concatCases()); }

// ---------------------------------------------------------------------------
// Kernels running in place. The op table lets an activation's result (and
// an activation gradient's) take its operand's storage when the op is the
// operand's last user; every backend's kernel must allow it. Graph:
//   %0 = conv2d %x, @w, @b        (in the backend's own layout)
//   %1 = relu %0                  (%0 is still read below: not in place)
//   %2 = relu_backward %dy, %0    (last reader of %0: may overwrite it)
//   %3 = sigmoid %1               (last reader of %1: may overwrite it)
// The plan must run at least one of them in place on the backend, and the
// results must match the reference. Bounds: the convolution's B = 2
// gamma(K) sum|x||w| (as in Differential.Conv); relu is exact and
// 1-Lipschitz, so %1 errs by B; relu_backward selects dy or 0 by the sign
// of %0, identical unless |%0| <= B, where |dy| is allowed; sigmoid is
// 1/4-Lipschitz: B/4 plus its own evaluation bound.
TEST(Differential, InPlace) {
  ConvGeom g{2, 3, 7, 7, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, true};
  Rng rng{0x1b1ace};
  auto x = rng.values(numel(g.x()), -1, 1), w = rng.values(numel(g.wt()), -1, 1);
  auto b = rng.values(g.k, -1, 1), dy = rng.values(numel(g.y()), -1, 1);
  std::vector<Operand> ops = {input("x", g.x(), x, true), input("dy", g.y(), dy),
                              param("w", g.wt(), w, true), param("b", {g.k}, b, true)};
  std::string y = typeText(g.y());
  Case c;
  c.op = "relu";
  c.label = "conv2d " + g.label() + " -> relu, relu_backward, sigmoid";
  c.operands = ops;
  c.body = {"%0 = conv2d %x, @w, @b " + g.attrs() + " : " + y, "%1 = relu %0 : " + y,
            "%2 = relu_backward %dy, %0 : " + y, "%3 = sigmoid %1 : " + y};
  c.results = {"%2", "%3"};
  c.resultDims = {g.y(), g.y()};

  // The convolution alone, for its exact values and magnitudes.
  Case conv = c;
  conv.body = {c.body[0]};
  conv.results = {"%0"};
  conv.resultDims = {g.y()};
  conv.operands.erase(conv.operands.begin() + 1); // dy
  auto z = runReference64(conv, false), mz = runReference64(conv, true);
  ASSERT_EQ(z.size(), 1u);
  ASSERT_EQ(mz.size(), 1u);
  double convTerms = static_cast<double>(g.c * g.kh * g.kw + 1);

  GraphRunner ref(c.irText("f32"), 0, "reference");
  ASSERT_TRUE(ref.ok()) << ref.error();
  int tested = 0;
  for (const std::string &backend : otherBackends()) {
    std::vector<std::string> missing;
    for (const char *op : {"conv2d", "relu", "relu_backward", "sigmoid"}) {
      Case one = c;
      one.op = op;
      if (!claims(backend, one)) missing.push_back(op);
    }
    if (!missing.empty()) {
      std::string m;
      for (const auto &s : missing) m += " " + s;
      std::cout << "[ skipped  ] " << backend << " in-place check: not claimed:" << m << "\n";
      continue;
    }
    ++tested;
    GraphRunner r(c.irText("f32"), 0, backend);
    ASSERT_TRUE(r.ok()) << r.error();
    // Which steps run in place on this backend.
    const runtime::Plan &plan = *r.plan();
    std::string inPlace;
    for (const runtime::PlanStep &s : plan.steps) {
      if (!s.op || s.backend != backend) continue;
      for (int o : s.out)
        for (int i : s.in)
          if (plan.root(o) == plan.root(i)) inPlace += " " + s.op->name();
    }
    std::cout << "[ diff     ] " << backend
              << " runs in place:" << (inPlace.empty() ? " nothing" : inPlace) << "\n";
    EXPECT_FALSE(inPlace.empty()) << "the plan on " << backend
                                  << " runs no kernel in place, so this test checks nothing:\n"
                                  << plan.str();
    std::vector<std::vector<double>> got, want;
    for (GraphRunner *gr : {&ref, &r}) {
      for (const Operand &o : c.operands) {
        if (o.isParam) {
          ASSERT_TRUE(gr->setParam(o.name, o.values));
        }
      }
      auto outs = gr->runValues({x, dy});
      ASSERT_EQ(outs.size(), 2u);
      (gr == &ref ? want : got) = outs;
    }
    Allowed allowed(2, std::vector<double>(dy.size()));
    for (size_t i = 0; i < dy.size(); ++i) {
      double bound = 2 * gamma(convTerms) * mz[0][i];
      allowed[0][i] = std::abs(z[0][i]) <= bound ? std::abs(dy[i]) : 0.0;
      double s = sigmoidOf(std::max(z[0][i], 0.0));
      allowed[1][i] = bound / 4 + (kRefExp + gamma(2) + kOtherLogistic) * s;
    }
    Comparison cmp = compareOutputs(c, backend, got, want, {}, allowed);
    std::cout << "[ diff     ] InPlace: " << backend << " worst |a-b|/allowed " << cmp.worstRatio
              << "\n";
    // Running again reads the parameters and inputs anew: results must not
    // depend on what the in-place kernels left behind.
    auto again = r.runValues({x, dy});
    ASSERT_EQ(again.size(), 2u);
    EXPECT_EQ(again, got) << backend << ": a second run gives other results";
  }
  if (!tested) std::cout << "[ skipped  ] no backend other than the reference claims every op\n";
}

// ---------------------------------------------------------------------------
// Coverage: lists, per non-reference backend, the ops its kernels claim, and
// fails for a kernel that no case above exercised (the registry entry that
// KernelRegistry::find returns for some case), so that a new kernel must
// come with cases.
TEST(Differential, Coverage) {
  std::vector<Case> cases = allCases();
  const runtime::KernelRegistry &reg = runtime::KernelRegistry::get();
  for (const std::string &backend : otherBackends()) {
    std::map<const runtime::KernelEntry *, int> exercised;
    std::ostringstream listing;
    for (const runtime::KernelEntry *e : reg.all())
      if (e->backend == backend) exercised[e] = 0;
    for (const Case &c : cases) {
      if (!claims(backend, c)) continue;
      // The entry find() returns for this case.
      for (auto &[e, n] : exercised)
        if (e->op == c.op && e->dtype == ir::DType::F32) ++n;
    }
    std::vector<std::string> missing;
    listing << "[ claims   ] " << backend << ":";
    for (const auto &[e, n] : exercised) {
      std::string name =
          e->op +
          (e->dtype == ir::DType::F32 ? "" : "(" + std::string(ir::dtypeName(e->dtype)) + ")");
      listing << " " << name << "[" << n << "]";
      if (!n) missing.push_back(name);
    }
    std::cout << listing.str() << "\n";
    std::string m;
    for (const auto &s : missing) m += " " + s;
    EXPECT_TRUE(missing.empty()) << backend
                                 << " has kernels that no differential case exercises:" << m
                                 << "; add cases for them to test/unit/DifferentialTest.cpp";
  }
}

} // namespace
} // namespace dtnn::test
