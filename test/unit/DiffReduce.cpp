// Differential cases of the Reduce family: reduce_sum, reduce_max and
// reduce_max_backward over the inner, outer, middle, alternating and all
// axes, over size-1 axes only and with size-1 dimensions between, and over
// more elements than one segment of the device's sums takes (rows and
// columns); and the helpers of the gradient rules, broadcast_like, fill and
// count_like.
//   reduce_sum           the reference sums K = numel(x) / numel(y) terms
//                        per output in double and rounds once: each side
//                        within gamma_d(K) sum|x| of the exact sum (the
//                        magnitude run's value), then roundedFromDouble.
//   reduce_max           a selection: exact (a NaN among the elements gives NaN).
//   reduce_max_backward  dy / k at the k elements equal to the maximum, one
//                        division in float32 on each side. Scores from a
//                        few integers make ties; a NaN makes no element
//                        equal to the maximum (all zeros).
//   broadcast_like, fill, count_like  copies and constants: exact.
#include "DiffCases.h"

#include <cmath>
#include <limits>

namespace dtnn::test::diff {
namespace {

// x reduced over `axes` (to size 1).
struct Reduction {
  std::vector<int64_t> x, axes;
};

std::vector<int64_t> reducedDims(const Reduction &r) {
  std::vector<int64_t> y = r.x;
  for (int64_t a : r.axes) y[static_cast<size_t>(a)] = 1;
  return y;
}

std::string axesAttr(const Reduction &r) { return "{axes=" + intsText(r.axes) + "}"; }

// The double sums of reduce_sum rounded once: K terms per output.
Tolerance doubleSums(double terms) {
  return [terms](const Eval &e) {
    Allowed a;
    for (size_t k = 0; k < e.exact.size(); ++k) {
      a.emplace_back();
      for (size_t i = 0; i < e.exact[k].size(); ++i)
        a.back().push_back(roundedFromDouble(e.exact[k][i], gammaD(terms) * e.magnitude[k][i]));
    }
    return a;
  };
}

// Values drawn from the integers 0..3 (ties), with a NaN at probability pNaN.
std::vector<double> tiedValues(int64_t n, double pNaN, Rng &rng) {
  std::vector<double> v(static_cast<size_t>(n));
  for (double &x : v)
    x = rng.chance(pNaN) ? std::numeric_limits<double>::quiet_NaN()
                         : static_cast<double>(rng.range(0, 3));
  return v;
}

void reductionCases(std::vector<Case> &cases, Rng &rng) {
  const std::vector<Reduction> shapes = {
      {{7, 13}, {1}},         {{7, 13}, {0}},
      {{7, 13}, {0, 1}},      {{2, 3, 5, 7}, {1}},
      {{2, 3, 5, 7}, {0, 2}}, {{2, 3, 5, 7}, {1, 3}},
      {{2, 3, 5, 7}, {3}},    {{2, 1, 5, 1, 3}, {1, 2}},
      {{4, 1, 6}, {1}},       {{3, 50000}, {1}},
      {{3000, 8}, {0}},       {{100000}, {0}},
  };
  for (const Reduction &r : shapes) {
    std::vector<int64_t> y = reducedDims(r);
    int64_t n = numel(r.x);
    double terms = static_cast<double>(n / numel(y));
    std::string l = "x=" + dimsText(r.x) + " " + axesAttr(r);

    Case sum = oneOp("reduce_sum", l, {input("x", r.x, rng.values(n, -2, 2), true)},
                     "reduce_sum %x " + axesAttr(r), {y});
    sum.magnitudeRun = true;
    sum.tolerance = doubleSums(terms);
    cases.push_back(sum);

    Case max = oneOp("reduce_max", l, {input("x", r.x, rng.values(n, -2, 2))},
                     "reduce_max %x " + axesAttr(r), {y});
    max.tolerance = exactly();
    cases.push_back(max);

    // Ties and NaNs, the maximum computed in the graph.
    auto x = tiedValues(n, 0.01, rng);
    Case tied = oneOp("reduce_max", l + " ties, NaNs", {input("x", r.x, x)},
                      "reduce_max %x " + axesAttr(r), {y});
    tied.tolerance = exactly();
    cases.push_back(tied);

    Case b;
    b.op = "reduce_max_backward";
    b.label = l + " ties, NaNs";
    b.operands = {input("dy", y, rng.values(numel(y), -2, 2)), input("x", r.x, x)};
    b.body = {"%y = reduce_max %x " + axesAttr(r) + " : " + typeText(y),
              "%0 = reduce_max_backward %dy, %x, %y " + axesAttr(r) + " : " + typeText(r.x)};
    b.results = {"%0"};
    b.resultDims = {r.x};
    b.tolerance = relative(1, 1);
    cases.push_back(b);
  }
}

void helperCases(std::vector<Case> &cases, Rng &rng) {
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> broadcasts = {
      {{1, 3, 1, 1}, {2, 3, 5, 7}}, {{7}, {4, 7}},   {{4, 1}, {4, 9}}, {{}, {3, 4}},
      {{2, 1, 5}, {3, 2, 4, 5}},    {{3, 4}, {3, 4}}};
  for (const auto &[xd, ld] : broadcasts) {
    Case c = oneOp("broadcast_like", "x=" + dimsText(xd) + " like=" + dimsText(ld),
                   {input("x", xd, rng.values(numel(xd), -2, 2)),
                    input("like", ld, rng.values(numel(ld), -1, 1))},
                   "broadcast_like %x, %like", {ld});
    c.tolerance = exactly();
    cases.push_back(c);
  }
  for (const auto &[d, value] : std::vector<std::pair<std::vector<int64_t>, double>>{
           {{3, 4}, 2.5}, {{1000}, 0.0}, {{2, 3, 5}, -1.25}}) {
    std::string attrs = "{value=" + floatText(value) + "}";
    Case c = oneOp("fill", dimsText(d) + " " + attrs,
                   {input("like", d, rng.values(numel(d), -1, 1))}, "fill %like " + attrs, {d});
    c.tolerance = exactly();
    cases.push_back(c);
  }
  for (double offset : {0.0, -1.0, -500.0}) {
    std::vector<int64_t> xd = {8, 3, 5, 5}, ld = {1, 3, 1, 1};
    std::string attrs = "{offset=" + floatText(offset) + "}";
    Case c = oneOp("count_like", "x=" + dimsText(xd) + " like=" + dimsText(ld) + " " + attrs,
                   {input("x", xd, rng.values(numel(xd), -1, 1)),
                    input("like", ld, rng.values(numel(ld), -1, 1))},
                   "count_like %x, %like " + attrs, {ld});
    c.tolerance = exactly();
    cases.push_back(c);
  }
}

} // namespace

std::vector<Case> reduceCases() {
  std::vector<Case> cases;
  Rng rng{0x5ed0};
  reductionCases(cases, rng);
  helperCases(cases, rng);
  return cases;
}

} // namespace dtnn::test::diff
