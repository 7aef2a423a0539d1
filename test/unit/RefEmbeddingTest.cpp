// embedding on the reference backend: rows looked up by index (NaN for an index outside the
// table), and the table's gradient summing the dy rows of repeated tokens, with the padding
// row left at zero; and its gradient against finite differences.
#include "GradCheck.h"
#include "RefRun.h"

#include <gtest/gtest.h>

#include <cmath>

namespace dtnn::test {

using ir::DType;
using ir::TensorType;

TEST(RefEmbedding, LookupAndGradient) {
  // Table row r is [r, 10 r]; tokens 2, 0, 2, 5 (5 is outside the 4 rows), padding row 0.
  auto outs = runGraph(R"(
graph @f(%i: i32[2,2], %w: f64[4,2], %dy: f64[2,2,2]) -> (f64[2,2,2], f64[4,2]) {
  %0 = embedding %i, %w {padding_idx=0} : f64[2,2,2]
  %1 = embedding_backward %dy, %i, %w {padding_idx=0} : f64[4,2]
  return %0, %1
}
)",
                       {makeTensor(TensorType(DType::I32, {2, 2}), {2, 0, 2, 5}),
                        makeTensor(TensorType(DType::F64, {4, 2}), {0, 0, 1, 10, 2, 20, 3, 30}),
                        makeTensor(TensorType(DType::F64, {2, 2, 2}), {1, 2, 3, 4, 5, 6, 7, 8})});
  ASSERT_EQ(outs.size(), 2u);
  std::vector<double> y = toDoubles(outs[0]), dw = toDoubles(outs[1]);
  EXPECT_EQ(std::vector<double>(y.begin(), y.begin() + 6),
            (std::vector<double>{2, 20, 0, 0, 2, 20}));
  EXPECT_TRUE(std::isnan(y[6]) && std::isnan(y[7]));
  // Row 2 sums tokens 0 and 2; row 0 is padding; token 5 adds nowhere.
  EXPECT_EQ(dw, (std::vector<double>{0, 0, 0, 0, 1 + 5, 2 + 6, 0, 0}));
}

TEST(GradEmbedding, Table) {
  GradCheckOptions opts;
  opts.classes = 7;
  expectGradientsMatch("param @w : f64[7,3] init=normal\n"
                       "graph @f(%i: i32[2,5]) -> f64[2,5,3] {\n"
                       "  %0 = embedding %i, @w : f64[2,5,3]\n"
                       "  return %0\n}\n",
                       opts);
}

} // namespace dtnn::test
