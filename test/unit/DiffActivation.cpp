// Differential cases of the unary elementwise ops (activations and scale)
// and of softmax and log_softmax, forward and backward, with the
// derivation of each bound from the formula the reference evaluates and
// the accuracy assumed of the math functions (see DiffCases.h).
#include "DiffCases.h"

#include <algorithm>
#include <cmath>
#include <functional>

namespace dtnn::test::diff {

// ---------------------------------------------------------------------------
// Activations and other unary elementwise ops, forward and backward: relu,
// relu6, leaky_relu, sigmoid, tanh, silu, gelu (erf and tanh forms),
// hard_sigmoid, hard_swish, their *_backward, and scale. Each bound is the
// reference's error plus the other backend's at one element, derived at
// each op below from the formula the reference evaluates (the backend's
// either its own arithmetic or the accuracy assumed in DiffCases.h for its
// math functions), relative to a magnitude M of the formula's terms that
// covers cancellation (a relative bound alone would not hold where the terms
// cancel: gelu's 1 + erf for x << 0, silu's 1 + x (1 - s) near x = -1.28).
//
// The backward ops take the forward input x (relu, relu6, leaky_relu, silu,
// gelu, hard_*) or the forward result y (sigmoid, tanh), generated from
// random x as the forward op would.
double sigmoidOf(double x) { return 1 / (1 + std::exp(-x)); }

namespace {

constexpr double kSqrtHalf = 0.70710678118654752440;
constexpr double kSqrt2OverPi = 0.79788456080286535588;
constexpr double kGeluKappa = 0.044715;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;

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

} // namespace

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
namespace {

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

} // namespace

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

} // namespace dtnn::test::diff
