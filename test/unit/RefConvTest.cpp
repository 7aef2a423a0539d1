// Forward results of the reference conv2d kernel on small cases computed by
// hand or with PyTorch, and bit-identical results of the conv2d kernels for
// any thread count.
#include "RefRun.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <string>

namespace dtnn::test {
namespace {

using Values = std::vector<double>;

// Deterministic test data: ((i * a) mod m - m / 2) / scale for i in [0, n).
Values pattern(int64_t n, int64_t a, int64_t m, double scale) {
  Values v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<double>((i * a) % m - m / 2) / scale;
  return v;
}

Values iota(int64_t n, double start = 1) {
  Values v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = start + static_cast<double>(i);
  return v;
}

void expectValues(const Values &actual, const Values &expected, double tol) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i)
    EXPECT_NEAR(actual[i], expected[i], tol) << "element " << i;
}

TEST(RefConv, DiagonalDifferenceWithBias) {
  const char *ir = R"(
param @w : f64[1,1,2,2] init=zeros
param @b : f64[1] init=zeros
graph @f(%x: f64[1,1,3,3]) -> f64[1,1,2,2] {
  %0 = conv2d %x, @w, @b : f64[1,1,2,2]
  return %0
}
)";
  // y[i][j] = x[i][j] - x[i+1][j+1] + 0.5 = 1 - 5 + 0.5 everywhere.
  auto out = runValues(ir, {iota(9)}, {{"w", {1, 0, 0, -1}}, {"b", {0.5}}});
  ASSERT_EQ(out.size(), 1u);
  expectValues(out[0], {-3.5, -3.5, -3.5, -3.5}, 0);
}

TEST(RefConv, PaddedStridedBoxFilter) {
  const char *ir = R"(
param @w : f32[1,1,3,3] init=zeros
graph @f(%x: f32[1,1,3,3]) -> f32[1,1,2,2] {
  %0 = conv2d %x, @w {stride=[2,2], pad=[1,1,1,1]} : f32[1,1,2,2]
  return %0
}
)";
  // Each window covers a 2x2 corner of x = 1..9 inside the zero padding.
  auto out = runValues(ir, {iota(9)}, {{"w", Values(9, 1.0)}});
  ASSERT_EQ(out.size(), 1u);
  expectValues(out[0], {12, 16, 24, 28}, 0);
}

TEST(RefConv, DepthwiseScalesEachChannel) {
  const char *ir = R"(
param @w : f64[3,1,3,3] init=zeros
graph @f(%x: f64[2,3,4,4]) -> f64[2,3,4,4] {
  %0 = conv2d %x, @w {pad=[1,1,1,1], groups=3} : f64[2,3,4,4]
  return %0
}
)";
  // Channel c's filter is c + 1 at its centre, so y = (c + 1) * x.
  Values w(27, 0.0);
  for (int c = 0; c < 3; ++c) w[c * 9 + 4] = c + 1;
  Values x = pattern(96, 7, 11, 4);
  auto out = runValues(ir, {x}, {{"w", w}});
  ASSERT_EQ(out.size(), 1u);
  Values expected(96);
  for (int64_t i = 0; i < 96; ++i) expected[i] = x[i] * static_cast<double>((i / 16) % 3 + 1);
  expectValues(out[0], expected, 0);
}

// PyTorch: F.conv2d(F.pad(x, (2, 1, 1, 0)), w, b, stride=(2, 1), dilation=(1, 2),
// groups=2) with the same pattern data; these are the results times 48.
const Values kGroupedTimes48 = {91,  4,   -112, 9,   92,  23,  -39, -6,  -37, 149, 4,  61,
                                -56, -18, -36,  -26, 13,  15,  57,  12,  -69, -84, 75, -29,
                                -36, -33, 54,   -77, 27,  25,  -128, 19, 41,  -12, -15, -77,
                                118, -38, 34,   22,  47,  116, -8,  45,  6,   75,  80, 62};

TEST(RefConv, GroupedDilatedStridedAsymmetricPadMatchesPyTorch) {
  for (const char *dt : {"f64", "f32"}) {
    std::string ir = R"(
param @w : T[4,2,3,3] init=zeros
param @b : T[4] init=zeros
graph @f(%x: T[1,4,6,5]) -> T[1,4,3,4] {
  %0 = conv2d %x, @w, @b {stride=[2,1], pad=[1,2,0,1], dilation=[1,2], groups=2} : T[1,4,3,4]
  return %0
}
)";
    for (size_t p; (p = ir.find("T[")) != std::string::npos;) ir.replace(p, 1, dt);
    auto out = runValues(ir, {pattern(120, 37, 17, 8)},
                         {{"w", pattern(72, 11, 13, 6)}, {"b", {0.5, -0.25, 0.0, 1.0}}});
    ASSERT_EQ(out.size(), 1u);
    Values expected;
    for (double v : kGroupedTimes48) expected.push_back(v / 48);
    expectValues(out[0], expected, std::string(dt) == "f64" ? 1e-12 : 1e-5);
  }
}

// A medium conv2d on x f32[9,6,14,14] with 5x5 windows, large enough for
// several batch chunks and threads.
struct ConvCase {
  int64_t groups, k, sh, sw, padTop, padLeft, padBottom, padRight, dh, dw;
  static constexpr int64_t n = 9, c = 6, h = 14, w = 14, kh = 5, kw = 5;

  int64_t cg() const { return c / groups; }
  int64_t oh() const { return (h + padTop + padBottom - dh * (kh - 1) - 1) / sh + 1; }
  int64_t ow() const { return (w + padLeft + padRight - dw * (kw - 1) - 1) / sw + 1; }
  std::string attrs() const {
    auto s = [](int64_t v) { return std::to_string(v); };
    return "{stride=[" + s(sh) + "," + s(sw) + "], pad=[" + s(padTop) + "," + s(padLeft) + "," +
           s(padBottom) + "," + s(padRight) + "], dilation=[" + s(dh) + "," + s(dw) +
           "], groups=" + s(groups) + "}";
  }
  Values x() const { return pattern(n * c * h * w, 37, 101, 17); }
  Values dy() const { return pattern(n * k * oh() * ow(), 13, 97, 29); }
  Values weight() const { return pattern(k * cg() * kh * kw, 7, 89, 31); }
  Values bias() const { return pattern(k, 5, 7, 3); }
};

std::string dimsText(std::initializer_list<int64_t> dims) {
  std::string s = "f32[";
  for (int64_t d : dims) s += std::to_string(d) + ",";
  s.back() = ']';
  return s;
}

// Runs conv2d and its three backward ops on case `c` with `threads` threads;
// returns y, dx, dw and db.
std::vector<Values> runConvOps(const ConvCase &c, int threads) {
  std::string xt = dimsText({c.n, c.c, c.h, c.w}), yt = dimsText({c.n, c.k, c.oh(), c.ow()});
  std::string wt = dimsText({c.k, c.cg(), c.kh, c.kw}), bt = dimsText({c.k}), a = c.attrs();
  std::string ir = "param @w : " + wt + " init=zeros\nparam @b : " + bt + " init=zeros\n" +
                   "graph @f(%x: " + xt + ", %dy: " + yt + ") -> (" + yt + ", " + xt + ", " + wt +
                   ", " + bt + ") {\n  %0 = conv2d %x, @w, @b " + a + " : " + yt +
                   "\n  %1 = conv2d_backward_data %dy, @w, %x " + a + " : " + xt +
                   "\n  %2 = conv2d_backward_weights %dy, %x, @w " + a + " : " + wt +
                   "\n  %3 = conv2d_backward_bias %dy : " + bt + "\n  return %0, %1, %2, %3\n}\n";
  int saved = omp_get_max_threads();
  omp_set_num_threads(threads);
  auto out = runValues(ir, {c.x(), c.dy()}, {{"w", c.weight()}, {"b", c.bias()}});
  omp_set_num_threads(saved);
  return out;
}

// y, dx, dw and db of case `c` in double precision, straight from the
// definition of the convolution.
std::vector<Values> naiveConvOps(const ConvCase &c) {
  Values x = c.x(), dy = c.dy(), w = c.weight(), b = c.bias();
  int64_t oh = c.oh(), ow = c.ow(), cg = c.cg(), kg = c.k / c.groups;
  Values y(dy.size()), dx(x.size()), dw(w.size()), db(b.size());
  for (int64_t n = 0; n < c.n; ++n)
    for (int64_t k = 0; k < c.k; ++k)
      for (int64_t o = 0; o < oh; ++o)
        for (int64_t q = 0; q < ow; ++q) {
          int64_t yi = ((n * c.k + k) * oh + o) * ow + q;
          double s = b[k];
          db[k] += dy[yi];
          for (int64_t ci = 0; ci < cg; ++ci)
            for (int64_t i = 0; i < c.kh; ++i)
              for (int64_t j = 0; j < c.kw; ++j) {
                int64_t ih = o * c.sh - c.padTop + i * c.dh, iw = q * c.sw - c.padLeft + j * c.dw;
                if (ih < 0 || ih >= c.h || iw < 0 || iw >= c.w) continue;
                int64_t xi = ((n * c.c + (k / kg) * cg + ci) * c.h + ih) * c.w + iw;
                int64_t wi = ((k * cg + ci) * c.kh + i) * c.kw + j;
                s += x[xi] * w[wi];
                dx[xi] += dy[yi] * w[wi];
                dw[wi] += dy[yi] * x[xi];
              }
          y[yi] = s;
        }
  return {y, dx, dw, db};
}

// Plain; grouped, strided, dilated and asymmetrically padded; depthwise with
// two filters per channel.
const ConvCase kMediumCases[] = {{1, 16, 1, 1, 0, 0, 0, 0, 1, 1},
                                 {2, 16, 2, 2, 2, 1, 1, 2, 1, 2},
                                 {6, 12, 1, 2, 2, 2, 2, 2, 1, 1}};

TEST(RefConv, MediumCasesMatchTheDefinition) {
  for (const ConvCase &c : kMediumCases) {
    std::vector<Values> got = runConvOps(c, 2), want = naiveConvOps(c);
    ASSERT_EQ(got.size(), 4u) << c.attrs();
    for (size_t r = 0; r < 4; ++r) {
      ASSERT_EQ(got[r].size(), want[r].size());
      for (size_t i = 0; i < got[r].size(); ++i)
        ASSERT_NEAR(got[r][i], want[r][i], 1e-4 * (1 + std::abs(want[r][i])))
            << "output " << r << " element " << i << " of " << c.attrs();
    }
  }
}

TEST(RefConv, ResultsDoNotDependOnThreadCount) {
  for (const ConvCase &c : kMediumCases) {
    std::vector<Values> one = runConvOps(c, 1);
    ASSERT_EQ(one.size(), 4u) << c.attrs();
    for (int threads : {2, 3}) {
      std::vector<Values> many = runConvOps(c, threads);
      ASSERT_EQ(many.size(), 4u);
      for (size_t r = 0; r < 4; ++r)
        EXPECT_TRUE(one[r] == many[r])
            << "output " << r << " with " << threads << " threads, " << c.attrs();
    }
  }
}

} // namespace
} // namespace dtnn::test
