// Differential cases of matmul, attention and layer normalization.
//
// matmul: batched matrix products with transposes and batch dimensions that
// broadcast in either operand. Each result element is a dot product of K
// terms, within 2 gamma(K) * sum|terms| (magnitude run).
//
// scaled_dot_product_attention and its backward op, with and without masks.
// The reference computes in double and rounds once; the other backend chains
// float32 dot products (E, then S terms), a softmax whose exp is within
// kOtherExp, and for the gradients three more products of S or L terms.
// Inputs are in [-1, 1], E and S at most 16, so the scores are at most
// sqrt(E) in magnitude; the bound used is relative to the largest magnitude
// the result can have (sum over the softmax-weighted terms of |v| or |dy|
// scaled accordingly), with a factor for the chained products, checked
// against the magnitude run.
#include "DiffCases.h"

#include <algorithm>
#include <cmath>

namespace dtnn::test::diff {

std::vector<Case> matmulCases() {
  struct Shape {
    std::vector<int64_t> a, b;
    bool ta, tb;
  };
  const std::vector<Shape> shapes = {{{5, 7}, {7, 4}, false, false},
                                     {{2, 3, 5, 6}, {2, 3, 6, 4}, false, false},
                                     {{2, 3, 5, 6}, {2, 3, 4, 6}, false, true},
                                     {{2, 3, 6, 5}, {2, 3, 6, 4}, true, false},
                                     {{2, 3, 6, 5}, {2, 3, 4, 6}, true, true},
                                     {{3, 5, 8}, {8, 6}, false, false},
                                     {{3, 5, 8}, {6, 8}, false, true},
                                     {{5, 8}, {2, 3, 8, 6}, false, false},
                                     {{4, 1, 5, 6}, {3, 6, 2}, false, false},
                                     {{1, 9}, {9, 1}, false, false}};
  std::vector<Case> cases;
  Rng rng{0x3a7a};
  for (const Shape &s : shapes) {
    std::vector<int64_t> batchA(s.a.begin(), s.a.end() - 2), batchB(s.b.begin(), s.b.end() - 2);
    std::vector<int64_t> y = *ir::broadcastDims(batchA, batchB);
    int64_t m = s.a[s.a.size() - (s.ta ? 1 : 2)], k = s.a[s.a.size() - (s.ta ? 2 : 1)];
    y.push_back(m);
    y.push_back(s.b[s.b.size() - (s.tb ? 2 : 1)]);
    std::string attrs = std::string(" {transpose_a=") + (s.ta ? "true" : "false") +
                        ", transpose_b=" + (s.tb ? "true" : "false") + "}";
    Case c = oneOp("matmul", "a=" + dimsText(s.a) + " b=" + dimsText(s.b) + attrs,
                   {input("a", s.a, rng.values(numel(s.a), -1, 1), true),
                    input("b", s.b, rng.values(numel(s.b), -1, 1), true)},
                   "matmul %a, %b" + attrs, {y});
    c.magnitudeRun = true;
    c.tolerance = sumOfTerms(static_cast<double>(k));
    cases.push_back(c);
  }
  return cases;
}

// Each output within 4 (gamma(terms) + kOtherExp) times (1 + its largest
// magnitude): a perturbation d of a score moves its probability by
// about d relative, and the outputs are sums of probabilities (or their
// gradients) times values bounded by the output's magnitude.
Tolerance chainedProducts(double terms) {
  return [terms](const Eval &e) {
    Allowed a;
    for (const auto &out : e.exact) {
      double top = 0;
      for (double v : out) top = std::max(top, std::abs(v));
      a.emplace_back(out.size(), 4 * (gamma(terms) + kOtherExp) * (1 + top));
    }
    return a;
  };
}

std::vector<Case> attentionCases() {
  struct Shape {
    std::vector<int64_t> batch;
    int64_t l, s, e, ev;
    bool causal;
    std::vector<int64_t> mask; // empty: none
    double scale;
  };
  const std::vector<Shape> shapes = {{{2, 3}, 5, 7, 4, 6, false, {}, 0},
                                     {{2}, 6, 6, 8, 8, true, {}, 0},
                                     {{2, 2}, 4, 5, 3, 3, false, {2, 1, 1, 5}, 0.5},
                                     {{3}, 5, 5, 4, 2, true, {5, 5}, 0},
                                     {{1, 2}, 3, 9, 16, 5, false, {1, 2, 3, 9}, 0},
                                     {{2}, 4, 6, 5, 5, false, {6}, 0},
                                     {{2}, 5, 3, 4, 4, true, {5, 1}, 0},
                                     // 20 heads of 64 KiB of scores: groups of 10.
                                     {{20}, 128, 128, 8, 8, true, {}, 0},
                                     // 17 heads of 4 MiB of scores (8 MiB with their gradient):
                                     // runs of 16 (8) heads and a last one of 1 on the cuda
                                     // backend, and rows longer than its warp softmax takes.
                                     {{17}, 1024, 1024, 4, 4, true, {1024}, 0}};
  std::vector<Case> cases;
  Rng rng{0xa77e};
  for (const Shape &s : shapes) {
    auto dims = [&](int64_t rows, int64_t cols) {
      std::vector<int64_t> d = s.batch;
      d.push_back(rows);
      d.push_back(cols);
      return d;
    };
    std::vector<int64_t> qd = dims(s.l, s.e), kd = dims(s.s, s.e), vd = dims(s.s, s.ev),
                         yd = dims(s.l, s.ev);
    std::string attrs = std::string(" {is_causal=") + (s.causal ? "true" : "false") +
                        ", scale=" + std::to_string(s.scale) + "}";
    std::string label = "q=" + dimsText(qd) + " k=" + dimsText(kd) + " v=" + dimsText(vd) +
                        (s.mask.empty() ? "" : " mask=" + dimsText(s.mask)) + attrs;
    auto q = rng.values(numel(qd), -1, 1), k = rng.values(numel(kd), -1, 1),
         v = rng.values(numel(vd), -1, 1), dy = rng.values(numel(yd), -1, 1);
    std::vector<Operand> ops = {input("q", qd, q), input("k", kd, k), input("v", vd, v)};
    std::string mask = s.mask.empty() ? "" : ", %m";
    if (!s.mask.empty()) ops.push_back(input("m", s.mask, rng.values(numel(s.mask), -2, 0)));
    // Errors grow with the chain of products; every result is bounded by
    // the largest |v| or |dy| times the sizes below, which the bound scales.
    double terms = double(s.e + s.s + s.l);
    Case fwd = oneOp("scaled_dot_product_attention", label, ops,
                     "scaled_dot_product_attention %q, %k, %v" + mask + attrs, {yd});
    fwd.tolerance = chainedProducts(terms);
    cases.push_back(fwd);
    std::vector<Operand> bops = {input("dy", yd, dy)};
    bops.insert(bops.end(), ops.begin(), ops.end());
    Case bwd =
        oneOp("scaled_dot_product_attention_backward", label, bops,
              "scaled_dot_product_attention_backward %dy, %q, %k, %v" + mask + attrs, {qd, kd, vd});
    bwd.tolerance = chainedProducts(terms);
    cases.push_back(bwd);
  }
  return cases;
}

// layernorm and layernorm_backward over one or two trailing axes of width W, with R rows. The
// statistics are sums of W terms (2W for the variance, with the mean's error); x-hat errs by
// about gamma(2W) (1 + |x-hat|) and each output is x-hat or a sum of W or R products with it,
// so the bound is 4 gamma(2W + R + 10) times (1 + the output's largest magnitude).
std::vector<Case> layerNormCases() {
  struct Shape {
    std::vector<int64_t> x;
    int64_t axes;
  };
  const std::vector<Shape> shapes = {
      {{2, 5, 12}, 1}, {{3, 4, 6}, 2}, {{4, 33}, 1}, {{2, 3, 2, 16}, 1},
      // Rows longer than a warp takes, many rows (their column sums cut into segments of rows,
      // the last one shorter), and rows of a model's width.
      {{3, 2, 1100}, 1}, {{200, 40}, 1}, {{2, 40, 768}, 1}};
  std::vector<Case> cases;
  Rng rng{0x1a7e};
  for (const Shape &s : shapes) {
    std::vector<int64_t> affine(s.x.end() - s.axes, s.x.end());
    int64_t w = numel(affine), rows = numel(s.x) / w;
    std::string attrs = " {axes=" + std::to_string(s.axes) + ", eps=0.001}";
    std::string label = "x=" + dimsText(s.x) + attrs;
    auto x = rng.values(numel(s.x), -1, 1), dy = rng.values(numel(s.x), -1, 1);
    auto g = rng.values(w, 0.5, 1.5), b = rng.values(w, -0.5, 0.5);
    double terms = double(2 * w + rows + 10);
    Tolerance t = [terms](const Eval &e) {
      Allowed a;
      for (const auto &out : e.exact) {
        double top = 0;
        for (double v : out) top = std::max(top, std::abs(v));
        a.emplace_back(out.size(), 4 * gamma(terms) * (1 + top));
      }
      return a;
    };
    Case fwd = oneOp("layernorm", label,
                     {input("x", s.x, x), param("g", affine, g), param("b", affine, b)},
                     "layernorm %x, @g, @b" + attrs, {s.x});
    fwd.tolerance = t;
    cases.push_back(fwd);
    Case bwd = oneOp("layernorm_backward", label,
                     {input("dy", s.x, dy), input("x", s.x, x), param("g", affine, g)},
                     "layernorm_backward %dy, %x, @g" + attrs, {s.x, affine, affine});
    bwd.tolerance = t;
    cases.push_back(bwd);
    // Without gamma and beta (group norm's normalization): dgamma and dbeta are zero.
    Case plain = oneOp("layernorm", label + " no affine", {input("x", s.x, x)},
                       "layernorm %x" + attrs, {s.x});
    plain.tolerance = t;
    cases.push_back(plain);
    Case plainBwd = oneOp("layernorm_backward", label + " no affine",
                          {input("dy", s.x, dy), input("x", s.x, x)},
                          "layernorm_backward %dy, %x" + attrs, {s.x, affine, affine});
    plainBwd.tolerance = t;
    cases.push_back(plainBwd);
  }
  return cases;
}

} // namespace dtnn::test::diff
