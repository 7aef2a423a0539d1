// Differential cases of the Loss family: softmax_cross_entropy, nll_loss,
// mse_loss and bce_loss with their backward ops, and accuracy (top-k), with
// i32 labels: valid ones, rows of ignore_index (the default -100 and a class
// given as the attribute), every row ignored (a mean over no row is 0), and
// labels outside [0, C) (NaN losses and gradients, misses for accuracy).
// The shapes reach one class and rows longer than a warp, and more rows
// (elements) than one block or one segment of the device's sums takes.
//
// Bounds. The reference evaluates every formula in double from the float32
// operands and rounds the result to float32 once, and a backend mirroring it
// does the same (in its own order of summation). In double (unit roundoff
// u_d = 2^-53; exp, log and log1p within 1 ulp <= 2 u_d in glibc and in
// CUDA's double math library), each side's value L errs from the exact one
// by at most a bound D derived at each op below, so the two float32 results
// differ by at most roundedFromDouble(L, D) (DiffCases.h), L the f64 run's
// value: the reference's own double computation, as its operands are the
// same. The float32 arithmetic of mse_loss_backward is counted in
// roundings as DiffCases.h states; accuracy and the gradient of nll_loss
// are a count (or dy) divided once in double: D = u_d |L|.
#include "DiffCases.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace dtnn::test::diff {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr int64_t kIgnore = -100;

// The allowed |a - b| of each element of each output: roundedFromDouble(l, d(i, l)) at its f64
// value l.
template <typename F> Tolerance roundedWithin(F d) {
  return [d](const Eval &e) {
    Allowed a;
    for (const auto &out : e.exact) {
      a.emplace_back();
      for (size_t i = 0; i < out.size(); ++i)
        a.back().push_back(roundedFromDouble(out[i], d(i, out[i])));
    }
    return a;
  };
}

// The error of one division in double, of the result l.
double oneDivision(size_t, double l) { return kUd * std::abs(l); }

// An i32 label operand.
Operand labels(std::vector<double> values) {
  auto n = static_cast<int64_t>(values.size());
  Operand o = input("label", {n}, std::move(values));
  o.dtype = "i32";
  return o;
}

// How a case's labels are drawn: a valid class, `ignore` with probability pIgnore, one invalid
// label (C, past the last class) at row `invalidRow` (none when -1).
struct LabelMix {
  double pIgnore = 0;
  int64_t ignore = kIgnore;
  int64_t invalidRow = -1;
};

std::vector<double> drawLabels(int64_t n, int64_t c, const LabelMix &mix, Rng &rng) {
  std::vector<double> l(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    l[i] = static_cast<double>(rng.chance(mix.pIgnore) ? mix.ignore : rng.range(0, c - 1));
  if (mix.invalidRow >= 0) l[mix.invalidRow] = static_cast<double>(c);
  return l;
}

// A classifier case: scores [N,C] and the labels.
struct Classifier {
  int64_t n, c;
  double lo, hi; // scores
  LabelMix mix;
  std::string what; // for the label
};

std::string ignoreAttr(const LabelMix &m) {
  return m.ignore == kIgnore ? "" : " {ignore_index=" + std::to_string(m.ignore) + "}";
}

std::string labelOf(const Classifier &k) {
  return "x=" + dimsText({k.n, k.c}) + " " + k.what + ignoreAttr(k.mix);
}

// A row's maximum m, lse = log(sum(exp(x - m))) and range max(m - x), in double.
struct RowStats {
  double m = -INFINITY, lse = 0, range = 0;
};

RowStats rowStats(const std::vector<double> &x, int64_t row, int64_t c) {
  RowStats r;
  const double *p = x.data() + row * c;
  for (int64_t j = 0; j < c; ++j) r.m = std::max(r.m, p[j]);
  double s = 0;
  for (int64_t j = 0; j < c; ++j)
    s += std::exp(p[j] - r.m), r.range = std::max(r.range, r.m - p[j]);
  r.lse = std::log(s);
  return r;
}

bool counts(double label, int64_t ignore) { return static_cast<int64_t>(label) != ignore; }
bool valid(double label, int64_t c) { return label >= 0 && label < static_cast<double>(c); }

double countedOf(const std::vector<double> &label, int64_t ignore) {
  int64_t m = 0;
  for (double l : label) m += counts(l, ignore);
  return static_cast<double>(std::max<int64_t>(m, 1));
}

// softmax_cross_entropy and its backward op.
//   Each row's loss l = lse - (x_label - m): x - m rounds once (u_d R, R the row's range m -
//   min x), exp adds 2 u_d, so each term of the sum s errs by u_d (R + 2) relative and s by
//   u_d (R + C + 2); log adds that and 2 u_d |lse|; x_label - m and the difference round once
//   more: |dl| <= u_d (2R + C + 4 + 2|lse| + |l|), doubled for the second-order terms. The
//   mean adds gamma_d(N) sum|l| and the division u_d |L|: D = (sum|dl| + gamma_d(N) sum|l|) / M
//   + u_d |L|, M the counted rows.
//   The gradient (exp(x - m - lse) - onehot) dy / M: the exponent errs by u_d (2R + |lse|) +
//   |dlse| + u_d, exp adds 2 u_d (p <= 1), the difference, the scale dy / M and the product
//   one u_d each (|p - onehot| <= 1): D = 2 u_d |dy / M| (3R + C + 8 + 3|lse|).
void crossEntropyCases(std::vector<Case> &cases, Rng &rng) {
  const std::vector<Classifier> shapes = {
      {7, 13, -5, 5, {}, "labels valid"},
      {64, 1000, -5, 5, {}, "labels valid"},
      {2000, 10, -5, 5, {0.25}, "a quarter ignored"},
      {9, 1, -5, 5, {}, "one class"},
      {5, 9, 40, 60, {}, "large logits"},
      {33, 40, -3, 3, {0.3, 2}, "class 2 ignored"},
      {6, 5, -2, 2, {1}, "every row ignored"},
      {8, 13, -5, 5, {0, kIgnore, 3}, "an invalid label"},
  };
  for (const Classifier &k : shapes) {
    std::vector<int64_t> xd = {k.n, k.c};
    auto x = rng.values(k.n * k.c, k.lo, k.hi);
    auto label = drawLabels(k.n, k.c, k.mix, rng);
    double dy = rng.uniform(0.5, 2);
    int64_t ignore = k.mix.ignore;
    std::string attrs = ignoreAttr(k.mix);

    Case f = oneOp("softmax_cross_entropy", labelOf(k), {input("x", xd, x), labels(label)},
                   "softmax_cross_entropy %x, %label" + attrs, {{}});
    f.tolerance = roundedWithin([=](size_t, double l) {
      double sumD = 0, sumL = 0;
      for (int64_t i = 0; i < k.n; ++i) {
        if (!counts(label[i], ignore) || !valid(label[i], k.c)) continue;
        RowStats r = rowStats(x, i, k.c);
        double li = r.lse - (x[i * k.c + static_cast<int64_t>(label[i])] - r.m);
        sumD += 2 * kUd *
                (2 * r.range + static_cast<double>(k.c) + 4 + 2 * std::abs(r.lse) + std::abs(li));
        sumL += std::abs(li);
      }
      return (sumD + gammaD(static_cast<double>(k.n)) * sumL) / countedOf(label, ignore) +
             kUd * std::abs(l);
    });
    cases.push_back(f);

    Case b = oneOp("softmax_cross_entropy_backward", labelOf(k),
                   {input("dy", {}, {dy}), input("x", xd, x), labels(label)},
                   "softmax_cross_entropy_backward %dy, %x, %label" + attrs, {xd});
    double scale = dy / countedOf(label, ignore);
    std::vector<RowStats> rows;
    for (int64_t i = 0; i < k.n; ++i) rows.push_back(rowStats(x, i, k.c));
    b.tolerance = roundedWithin([=](size_t e, double) {
      const RowStats &r = rows[e / static_cast<size_t>(k.c)];
      return 2 * kUd * scale * (3 * r.range + static_cast<double>(k.c) + 8 + 3 * std::abs(r.lse));
    });
    cases.push_back(b);
  }
}

// nll_loss: -(sum of N values x_label) / M: gamma_d(N) sum|x_label| / M + u_d |L|. Its gradient
// -dy / M at the labels is one division in double: D = u_d |dx|.
void nllCases(std::vector<Case> &cases, Rng &rng) {
  const std::vector<Classifier> shapes = {
      {7, 13, -5, 0, {}, "labels valid"},
      {3000, 10, -8, 0, {0.2}, "a fifth ignored"},
      {50, 40, -5, 0, {0.3, 7}, "class 7 ignored"},
      {4, 3, -5, 0, {1}, "every row ignored"},
      {9, 1, -5, 0, {}, "one class"},
      {8, 13, -5, 0, {0.2, kIgnore, 5}, "an invalid label"},
  };
  for (const Classifier &k : shapes) {
    std::vector<int64_t> xd = {k.n, k.c};
    auto x = rng.values(k.n * k.c, k.lo, k.hi);
    auto label = drawLabels(k.n, k.c, k.mix, rng);
    int64_t ignore = k.mix.ignore;
    std::string attrs = ignoreAttr(k.mix);

    Case f = oneOp("nll_loss", labelOf(k), {input("x", xd, x), labels(label)},
                   "nll_loss %x, %label" + attrs, {{}});
    f.tolerance = roundedWithin([=](size_t, double l) {
      double sum = 0;
      for (int64_t i = 0; i < k.n; ++i)
        if (counts(label[i], ignore) && valid(label[i], k.c))
          sum += std::abs(x[i * k.c + static_cast<int64_t>(label[i])]);
      return gammaD(static_cast<double>(k.n)) * sum / countedOf(label, ignore) + kUd * std::abs(l);
    });
    cases.push_back(f);

    Case b = oneOp("nll_loss_backward", labelOf(k),
                   {input("dy", {}, {rng.uniform(0.5, 2)}), input("x", xd, x), labels(label)},
                   "nll_loss_backward %dy, %x, %label" + attrs, {xd});
    b.tolerance = roundedWithin(oneDivision);
    cases.push_back(b);
  }
}

// accuracy: counts of comparisons, divided once in double: D = u_d |L|. Scores from a few integers
// make ties (which go to the lower class), and NaNs (which rank before every class, and make a
// miss at the label) sit in some rows.
void accuracyCases(std::vector<Case> &cases, Rng &rng) {
  struct Acc {
    Classifier k;
    int64_t topK;
  };
  const std::vector<Acc> shapes = {
      {{50, 10, 0, 0, {}, "ties"}, 1},
      {{40, 100, 0, 0, {0.2}, "ties, a fifth ignored"}, 5},
      {{2000, 12, 0, 0, {0.1, 3}, "ties, class 3 ignored"}, 3},
      {{30, 7, 0, 0, {0, kIgnore, 4}, "ties, an invalid label"}, 2},
      {{10, 1, 0, 0, {}, "one class"}, 1},
  };
  for (const Acc &s : shapes) {
    const Classifier &k = s.k;
    std::vector<int64_t> xd = {k.n, k.c};
    std::vector<double> x(static_cast<size_t>(k.n * k.c));
    for (double &v : x) v = rng.chance(0.02) ? kNaN : static_cast<double>(rng.range(0, 3));
    auto label = drawLabels(k.n, k.c, k.mix, rng);
    std::string attrs =
        "{k=" + std::to_string(s.topK) +
        (k.mix.ignore == kIgnore ? "" : ", ignore_index=" + std::to_string(k.mix.ignore)) + "}";
    Case c = oneOp("accuracy", labelOf(k) + " " + attrs, {input("x", xd, x), labels(label)},
                   "accuracy %x, %label " + attrs, {{}});
    c.tolerance = roundedWithin(oneDivision);
    cases.push_back(c);
  }
}

// mse_loss: each term (p - t)^2 rounds three times in double, the sum of n nonnegative terms
// adds gamma_d(n) and the division u_d: D = gamma_d(n + 4) |L|. Its gradient T(2 dy / n)
// (p - t): the scale rounds in double and to float32, the difference and the product once
// each: within gamma(4) relative on each side.
// bce_loss with targets in [0, 1]: both of (t - 1) max(log1p(-p), -100) and -t max(log p, -100)
// are nonnegative; each errs by a log's 2 u_d and three roundings, the sum of n terms adds
// gamma_d(n) and the division u_d: D = gamma_d(n + 8) |L|. Probabilities of exactly 0 and 1
// reach the clamp at -100. Its gradient dy / n (p - t) / max((1 - p) p, 1e-12): six roundings in
// double, D = gamma_d(7) |dx|.
void elementCases(std::vector<Case> &cases, Rng &rng) {
  for (std::vector<int64_t> d : {std::vector<int64_t>{7, 13}, {4, 3, 5, 5}, {70000}}) {
    int64_t n = numel(d);
    double nd = static_cast<double>(n);
    std::string l = dimsText(d);
    auto p = rng.values(n, -2, 2), t = rng.values(n, -2, 2);
    double dy = rng.uniform(0.5, 2);

    Case mse = oneOp("mse_loss", l, {input("p", d, p), input("t", d, t)}, "mse_loss %p, %t", {{}});
    mse.tolerance = roundedWithin([nd](size_t, double v) { return gammaD(nd + 4) * std::abs(v); });
    cases.push_back(mse);

    Case mb =
        oneOp("mse_loss_backward", l, {input("dy", {}, {dy}), input("p", d, p), input("t", d, t)},
              "mse_loss_backward %dy, %p, %t", {d});
    mb.tolerance = relative(4, 4);
    cases.push_back(mb);

    auto prob = rng.values(n, 0.01, 0.99), target = rng.values(n, 0, 1);
    for (int64_t i = 0; i < n; i += 11) prob[i] = static_cast<double>(i % 2);
    for (int64_t i = 0; i < n; i += 7) target[i] = static_cast<double>(i % 3 == 0);
    Case bce =
        oneOp("bce_loss", l, {input("p", d, prob), input("t", d, target)}, "bce_loss %p, %t", {{}});
    bce.tolerance = roundedWithin([nd](size_t, double v) { return gammaD(nd + 8) * std::abs(v); });
    cases.push_back(bce);

    Case bb = oneOp("bce_loss_backward", l,
                    {input("dy", {}, {dy}), input("p", d, prob), input("t", d, target)},
                    "bce_loss_backward %dy, %p, %t", {d});
    bb.tolerance = roundedWithin([](size_t, double v) { return gammaD(7) * std::abs(v); });
    cases.push_back(bb);
  }
}

} // namespace

std::vector<Case> lossCases() {
  std::vector<Case> cases;
  Rng rng{0x1055};
  crossEntropyCases(cases, rng);
  nllCases(cases, rng);
  accuracyCases(cases, rng);
  elementCases(cases, rng);
  return cases;
}

} // namespace dtnn::test::diff
