// Differential cases of matmul: batched matrix products with transposes and
// batch dimensions that broadcast in either operand. Each result element is
// a dot product of K terms, within 2 gamma(K) * sum|terms| (magnitude run).
#include "DiffCases.h"

namespace dtnn::test::diff {

std::vector<Case> matmulCases() {
  struct Shape {
    std::vector<int64_t> a, b;
    bool ta, tb;
  };
  const std::vector<Shape> shapes = {
      {{5, 7}, {7, 4}, false, false},             {{2, 3, 5, 6}, {2, 3, 6, 4}, false, false},
      {{2, 3, 5, 6}, {2, 3, 4, 6}, false, true},  {{2, 3, 6, 5}, {2, 3, 6, 4}, true, false},
      {{2, 3, 6, 5}, {2, 3, 4, 6}, true, true},   {{3, 5, 8}, {8, 6}, false, false},
      {{3, 5, 8}, {6, 8}, false, true},           {{5, 8}, {2, 3, 8, 6}, false, false},
      {{4, 1, 5, 6}, {3, 6, 2}, false, false},    {{1, 9}, {9, 1}, false, false}};
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

} // namespace dtnn::test::diff
