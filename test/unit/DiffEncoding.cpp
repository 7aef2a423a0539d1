// Differential cases of the Encoding and Dropout families.
//
// one_hot and embedding copy (a 0, a 1, a table element, or NaN for an
// index outside the table): every output must match exactly. The labels and
// indices include values outside the range and the padding row.
// embedding_backward sums, for each table row, the dy rows of its tokens:
// within 2 gamma(tokens) * sum|dy| (the magnitude run); the shapes repeat
// indices many times, give a block of the backend several table rows, and
// rows of more elements than a block has threads. normalize computes
// y = (v / 255 - mean) / std in float32 from mean and std rounded to
// float32: five roundings, the subtraction's operands erring by u each, so
// each side errs by at most gamma(3) |y| + gamma(2) (v / 255 + |mean|) / std.
//
// dropout_train and drop_path_train draw their masks from a hash of (seed,
// step, element or sample), the same at every precision; a kept element is
// 1/(1-rate) rounded once (the mask) and x times that rounded once (y), so
// both are within gamma(2) relative on each side, and a mask that differs
// differs by far more. dropout and drop_path at inference are the identity.
#include "DiffCases.h"

#include <cmath>

namespace dtnn::test::diff {

namespace {

// An i32 (or other integer type's) graph input of uniform integers in [lo, hi].
Operand integers(std::string name, std::vector<int64_t> dims, int64_t lo, int64_t hi, Rng &rng,
                 std::string dtype = "i32") {
  std::vector<double> v(static_cast<size_t>(numel(dims)));
  for (double &x : v) x = static_cast<double>(rng.range(lo, hi));
  Operand o = input(std::move(name), std::move(dims), std::move(v));
  o.dtype = std::move(dtype);
  return o;
}

std::vector<int64_t> withRow(std::vector<int64_t> dims, int64_t d) {
  dims.push_back(d);
  return dims;
}

void oneHotCases(std::vector<Case> &cases, Rng &rng) {
  for (int64_t classes : {1, 7, 300}) {
    int64_t n = 9;
    std::string attrs = " {classes=" + std::to_string(classes) + ", dtype=\"$T\"}";
    // Labels from -1 to classes: one below and one past the range.
    Case c =
        oneOp("one_hot", "n=" + std::to_string(n) + attrs,
              {integers("label", {n}, -1, classes, rng)}, "one_hot %label" + attrs, {{n, classes}});
    c.tolerance = exactly();
    cases.push_back(c);
  }
}

std::string floatsText(const std::vector<double> &v) {
  std::string s;
  for (double x : v) s += (s.empty() ? "" : ", ") + floatText(x);
  return "[" + s + "]";
}

// normalize's bound (see the top) for images x [n, channels, ...] and one mean and std, or one
// per channel.
Tolerance normalizeBound(std::vector<double> mean, std::vector<double> std) {
  return [mean, std](const Eval &e) {
    const Operand &x = e.operand("x");
    int64_t channels = x.dims[1], plane = x.numel() / (x.dims[0] * channels);
    Allowed a(1);
    for (size_t i = 0; i < x.values.size(); ++i) {
      size_t c = mean.size() > 1 ? size_t((int64_t(i) / plane) % channels) : 0;
      double side = gamma(3) * std::abs(e.exact[0][i]) +
                    gamma(2) * (x.values[i] / 255 + std::abs(mean[c])) / std[c];
      a[0].push_back(2 * side);
    }
    return a;
  };
}

void normalizeCases(std::vector<Case> &cases, Rng &rng) {
  struct Shape {
    std::vector<int64_t> x;
    std::vector<double> mean, std;
  };
  const std::vector<Shape> shapes = {
      {{2, 3, 4, 5}, {0.485, 0.456, 0.406}, {0.229, 0.224, 0.225}},
      {{3, 1, 28, 28}, {0.1307}, {0.3081}},
      {{2, 4, 3}, {0.5}, {0.25}},
      {{1, 3, 70, 80}, {0.5, 0.25, 0.125}, {0.5, 1.5, 3.0}},
  };
  for (const Shape &s : shapes) {
    std::string attrs =
        " {mean=" + floatsText(s.mean) + ", std=" + floatsText(s.std) + ", dtype=\"$T\"}";
    Case c = oneOp("normalize", "x=" + dimsText(s.x) + attrs,
                   {integers("x", s.x, 0, 255, rng, "u8")}, "normalize %x" + attrs, {s.x});
    c.tolerance = normalizeBound(s.mean, s.std);
    cases.push_back(c);
  }
}

void embeddingCases(std::vector<Case> &cases, Rng &rng) {
  struct Shape {
    std::vector<int64_t> idx;
    int64_t v, d, pad;
  };
  const std::vector<Shape> shapes = {
      {{3, 5}, 6, 40, 2}, {{17}, 4, 3, -1}, {{4, 75}, 1500, 33, 7}, {{2, 40}, 9, 300, 0}};
  for (const Shape &s : shapes) {
    std::string attrs = " {padding_idx=" + std::to_string(s.pad) + "}";
    std::string label = "idx=" + dimsText(s.idx) + " weight=" + dimsText({s.v, s.d}) + attrs;
    std::vector<int64_t> y = withRow(s.idx, s.d);
    // Indices from -2 to v + 1: two below and two past the table.
    Operand idx = integers("idx", s.idx, -2, s.v + 1, rng);
    Operand w = param("w", {s.v, s.d}, rng.values(s.v * s.d, -1, 1));
    Case fwd = oneOp("embedding", label, {idx, w}, "embedding %idx, @w" + attrs, {y});
    fwd.tolerance = exactly();
    cases.push_back(fwd);
    Case bwd = oneOp("embedding_backward", label,
                     {input("dy", y, rng.values(numel(y), -1, 1), true), idx, w},
                     "embedding_backward %dy, %idx, @w" + attrs, {{s.v, s.d}});
    bwd.magnitudeRun = true;
    bwd.tolerance = sumOfTerms(static_cast<double>(numel(s.idx)));
    cases.push_back(bwd);
  }
}

} // namespace

std::vector<Case> encodingCases() {
  std::vector<Case> cases;
  Rng rng{0xe9c0de};
  oneHotCases(cases, rng);
  normalizeCases(cases, rng);
  embeddingCases(cases, rng);
  return cases;
}

std::vector<Case> dropoutCases() {
  struct Shape {
    std::vector<int64_t> x;
    double rate;
    int64_t seed, step;
  };
  const std::vector<Shape> shapes = {{{4, 50}, 0.3, 7, 3},
                                     {{6, 3, 5}, 0.5, 11, 1},
                                     {{5, 2000}, 0.1, 123456789, 40},
                                     {{3, 8}, 0.0, 1, 9}};
  std::vector<Case> cases;
  Rng rng{0xd809};
  for (const Shape &s : shapes) {
    std::string rate = "rate=" + floatText(s.rate);
    std::string train = " {" + rate + ", seed=" + std::to_string(s.seed) + "}";
    std::string label = "x=" + dimsText(s.x) + train + " step=" + std::to_string(s.step);
    Operand x = input("x", s.x, rng.values(numel(s.x), -2, 2));
    Operand step = input("step", {}, {static_cast<double>(s.step)});
    step.dtype = "i64";
    for (const char *op : {"dropout_train", "drop_path_train"}) {
      Case c = oneOp(op, label, {x, step}, std::string(op) + " %x, %step" + train, {s.x, s.x});
      c.tolerance = relative(2, 2);
      cases.push_back(c);
    }
    // A rate-0 dropout is removed from the graph before planning.
    for (const char *op : {"dropout", "drop_path"}) {
      if (s.rate == 0) continue;
      Case c = oneOp(op, "x=" + dimsText(s.x) + " {" + rate + "}", {x},
                     std::string(op) + " %x {" + rate + "}", {s.x});
      c.tolerance = exactly();
      cases.push_back(c);
    }
  }
  return cases;
}

} // namespace dtnn::test::diff
