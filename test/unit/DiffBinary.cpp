// Differential cases of the binary elementwise ops (add, sub, mul, div,
// with numpy broadcasting) and of concat: each result element is one or two
// roundings of the exact result, or an exact copy.
#include "DiffCases.h"

#include "ir/ops/ShapeUtil.h"

namespace dtnn::test::diff {

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
        // add with a fused relu (a ResNet block's residual add): relu of
        // the correctly rounded sum, exact on both sides.
        if (std::string(op) == "add") {
          Case r = c;
          r.label += " act=relu";
          r.body = {"%0 = add %a, %b {act=\"relu\"} : " + typeText(out)};
          cases.push_back(r);
        }
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

} // namespace dtnn::test::diff
