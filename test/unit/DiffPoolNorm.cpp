// Differential cases of the pooling and batch normalization ops, forward
// and backward (maxpool, avgpool, global_avgpool, batchnorm,
// batchnorm_train and their backward ops, moving_average, batchnorm_fold),
// with the derivation of each bound: the pooling ops are selections or
// short sums, the batch normalization ops have per-channel tolerances
// computed from the batch statistics.
#include "DiffCases.h"

#include "ir/ops/ShapeUtil.h"

#include <cmath>

namespace dtnn::test::diff {

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
namespace {

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

} // namespace

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
// batchnorm_backward_frozen, on [N,C] and [N,C,H,W] inputs, and
// moving_average. Inputs are viewed as [N,C,S]; per channel, count = N*S,
// mu and var are the batch mean and biased variance, E2 = mean(x^2),
// A1 = mean(|x|), computed here in double.
namespace {

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

} // namespace

namespace {

// A per-channel operand: of the statistics type $S (float32 for bf16 data).
Operand stat(Operand o) {
  o.dtype = "$S";
  return o;
}

// Results 1 and 2 of a backward case (dgamma, dbeta) are per-channel: of type $S.
void perChannelResults(Case &c) {
  c.statisticsResults = {1, 2};
  std::string &line = c.body[0];
  line = line.substr(0, line.rfind(" : ")) + " : " + typeText(c.resultDims[0]) + ", $S" +
         dimsText(c.resultDims[1]) + ", $S" + dimsText(c.resultDims[2]);
}

} // namespace

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
                     {input("x", xd, x), stat(param("g", {c}, g)), stat(param("b", {c}, b)),
                      buffer(stat(param("rm", {c}, rm)), false), buffer(stat(param("rv", {c}, rv)), false)},
                     "batchnorm %x, @g, @b, @rm, @rv {" + epsAttr + "}", {xd});
    inf.tolerance = batchNormTolerance(xd, eps);
    cases.push_back(inf);
    // With a fused relu (1-Lipschitz), the same bounds hold: oneDNN's
    // fuse_norm_relu against the reference kernel.
    const std::string relu = ", act=\"relu\"";
    Case infRelu = inf;
    infRelu.label += " act=relu";
    infRelu.body = {"%0 = batchnorm %x, @g, @b, @rm, @rv {" + epsAttr + relu + "} : " +
                    typeText(xd)};
    cases.push_back(infRelu);

    // batchnorm_train yields the new running statistics as results 3 and 4;
    // the graph returns y, mean and invstd, and the statistics are read back.
    Case tr;
    tr.op = "batchnorm_train";
    tr.label = l + " " + epsAttr + " momentum=" + floatText(mom);
    tr.operands = {input("x", xd, x), stat(param("g", {c}, g)), stat(param("b", {c}, b)),
                   buffer(stat(param("rm", {c}, rm)), true), buffer(stat(param("rv", {c}, rv)), true)};
    tr.body = {"%0, %1, %2, %3, %4 = batchnorm_train %x, @g, @b, @rm, @rv {" + epsAttr +
               ", momentum=" + floatText(mom) + "} : " + typeText(xd) + ", $S" + cv + ", $S" + cv +
               ", $S" + cv + ", $S" + cv};
    tr.results = {"%0", "%1", "%2"};
    tr.resultDims = {xd, {c}, {c}};
    tr.statisticsResults = {1, 2};
    tr.tolerance = batchNormTrainTolerance(xd, eps, mom);
    cases.push_back(tr);
    Case trRelu = tr;
    trRelu.label += " act=relu";
    trRelu.body = {"%0, %1, %2, %3, %4 = batchnorm_train %x, @g, @b, @rm, @rv {" + epsAttr +
                   ", momentum=" + floatText(mom) + relu + "} : " + typeText(xd) + ", $S" + cv +
                   ", $S" + cv + ", $S" + cv + ", $S" + cv};
    cases.push_back(trRelu);

    // The backward ops take the statistics a forward pass would have made.
    Channels ch(xd);
    std::vector<double> mean(c), invstd(c);
    for (int64_t k = 0; k < c; ++k) {
      ChannelStats st = statsOf(ch, x, k);
      mean[k] = static_cast<float>(st.mu);
      invstd[k] = static_cast<float>(1 / std::sqrt(st.var + eps));
    }
    Case bw = oneOp("batchnorm_backward", l,
                    {input("dy", xd, dy), input("x", xd, x), stat(input("g", {c}, g)),
                     stat(input("mean", {c}, mean)), stat(input("invstd", {c}, invstd))},
                    "batchnorm_backward %dy, %x, %g, %mean, %invstd", {xd, {c}, {c}});
    perChannelResults(bw);
    bw.tolerance = batchNormBackwardTolerance(xd);
    cases.push_back(bw);

    Case fz = oneOp("batchnorm_backward_frozen", l + " " + epsAttr,
                    {input("dy", xd, dy), input("x", xd, x), stat(input("g", {c}, g)),
                     stat(input("mean", {c}, rm)), stat(input("var", {c}, rv))},
                    "batchnorm_backward_frozen %dy, %x, %g, %mean, %var {" + epsAttr + "}",
                    {xd, {c}, {c}});
    perChannelResults(fz);
    fz.tolerance = batchNormFrozenTolerance(xd, eps);
    cases.push_back(fz);
  }
  // moving_average, decompose-batchnorm's update of a running statistic:
  // buf = (1 - momentum) buf + momentum value in double, then rounded once
  // (u |new buf| per side; the double arithmetic's error, a few 2^-53 of
  // the terms, is allowed as 2^-50 of them). It has no results of its own:
  // the buffer is read back, and the graph returns the doubled value
  // (exact).
  for (auto [c, mom] : {std::pair<int64_t, double>{5, 0.1}, {1000, 0.3}}) {
    Operand buf = param("rm", {c}, rng.values(c, -2, 2));
    buf.isBuffer = buf.readBack = true;
    Case ma;
    ma.op = "moving_average";
    ma.label = "buf=" + dimsText({c}) + " momentum=" + floatText(mom);
    ma.operands = {buf, input("v", {c}, rng.values(c, -2, 2))};
    ma.body = {"%0 = moving_average @rm, %v {momentum=" + floatText(mom) + "} : " + typeText({c}),
               "%1 = add %v, %v : " + typeText({c})};
    ma.results = {"%1"};
    ma.resultDims = {{c}};
    ma.tolerance = [mom](const Eval &e) {
      const auto &r = e.values("rm"), &v = e.values("v");
      Allowed a = {std::vector<double>(r.size()), std::vector<double>(r.size())};
      for (size_t i = 0; i < r.size(); ++i) {
        double terms = (1 - mom) * std::abs(r[i]) + mom * std::abs(v[i]);
        a[1][i] = 2 * (gamma(1) * std::abs((1 - mom) * r[i] + mom * v[i]) + 0x1p-50 * terms);
      }
      return a;
    };
    cases.push_back(ma);
  }
  return cases;
}

// batchnorm_fold: s = gamma / sqrt(var + eps) (three roundings), w' = w s
// (one more), b' = (bias - mean) s + beta (three more): each side within
// gamma(4) |w s| and gamma(6) ((|bias| + |mean|) |s| + |beta|) of the exact
// values, so twice that apart. The weight feeds a convolution too, so that
// oneDNN folds it in the convolution's blocked layout: grouped (5-d in
// oneDNN) and plain ones, with and without a bias; and a dense weight.
std::vector<Case> batchNormFoldCases() {
  struct Fold {
    std::vector<int64_t> w;
    int64_t groups; // 0: a dense weight
    bool bias;
  };
  const std::vector<Fold> folds = {{{16, 8, 3, 3}, 1, true},
                                   {{32, 1, 3, 3}, 32, false},
                                   {{12, 2, 3, 3}, 6, true},
                                   {{10, 24}, 0, false}};
  std::vector<Case> cases;
  Rng rng{0xf01d};
  for (const Fold &f : folds) {
    int64_t k = f.w[0];
    double eps = 1e-3;
    auto w = rng.values(numel(f.w), -1, 1), g = rng.values(k, -1.5, 1.5);
    auto be = rng.values(k, -1, 1), m = rng.values(k, -1, 1), v = rng.values(k, 0.5, 2);
    auto b = rng.values(k, -1, 1);
    Case c;
    c.op = "batchnorm_fold";
    c.label = "w=" + dimsText(f.w) + (f.groups > 1 ? " groups=" + std::to_string(f.groups) : "") +
              (f.bias ? " bias" : "");
    c.magnitudeRun = true; // for the layer's bound
    c.operands = {param("w", f.w, w, true), param("g", {k}, g), param("be", {k}, be),
                  param("m", {k}, m), param("v", {k}, v)};
    if (f.bias) c.operands.push_back(param("b", {k}, b));
    std::string cv = dimsText({k});
    c.body = {"%0, %1 = batchnorm_fold @w, @g, @be, @m, @v" + std::string(f.bias ? ", @b" : "") +
              " {eps=" + floatText(eps) + "} : " + typeText(f.w) + ", $T" + cv};
    if (f.groups > 0) {
      int64_t cin = f.w[1] * f.groups;
      std::vector<int64_t> xd = {2, cin, 6, 6}, yd = {2, k, 6, 6};
      c.operands.push_back(input("x", xd, rng.values(numel(xd), -1, 1), true));
      c.body.push_back("%2 = conv2d %x, @w {pad=[1,1,1,1], groups=" + std::to_string(f.groups) +
                       "} : " + typeText(yd));
      c.results = {"%0", "%1", "%2"};
      c.resultDims = {f.w, {k}, yd};
    } else {
      std::vector<int64_t> xd = {3, f.w[1]};
      c.operands.push_back(input("x", xd, rng.values(numel(xd), -1, 1), true));
      c.body.push_back("%2 = dense %x, @w : " + typeText({3, k}));
      c.results = {"%0", "%1", "%2"};
      c.resultDims = {f.w, {k}, {3, k}};
    }
    int64_t window = numel(f.w) / k;
    c.tolerance = [f, k, eps, window](const Eval &e) {
      const auto &w = e.values("w"), &g = e.values("g"), &be = e.values("be");
      const auto &m = e.values("m"), &v = e.values("v");
      std::vector<double> bias = f.bias ? e.values("b") : std::vector<double>(k, 0.0);
      Allowed a(3);
      int64_t per = numel(f.w) / k;
      for (int64_t ch = 0; ch < k; ++ch) {
        double sc = std::abs(g[ch]) / std::sqrt(v[ch] + eps);
        for (int64_t i = 0; i < per; ++i)
          a[0].push_back(2 * gamma(4) * std::abs(w[ch * per + i]) * sc);
        a[1].push_back(2 * gamma(6) * ((std::abs(bias[ch]) + std::abs(m[ch])) * sc +
                                       std::abs(be[ch])));
      }
      // The layer on the unfolded weight: a sum of `window` terms.
      Allowed layer = sumOfTerms(static_cast<double>(window))(e);
      a[2] = layer[2];
      return a;
    };
    cases.push_back(c);
  }
  return cases;
}

} // namespace dtnn::test::diff
