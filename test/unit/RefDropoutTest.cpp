// dropout_train on the reference backend: the fraction kept, the mask values,
// and a mask that is a pure function of (seed, step, index): repeatable,
// different across steps and seeds, and independent of the thread count.
#include "RefRun.h"

#include "runtime/plan/Plan.h"

#include <gtest/gtest.h>

#include <omp.h>

#include <string>

namespace dtnn::test {
namespace {

// A graph returning y and the mask of dropout_train over `count` elements.
std::string dropoutGraph(const std::string &type, int count, const std::string &attrs) {
  std::string t = type + "[" + std::to_string(count) + "]";
  return "graph @f(%x: " + t + ", %step: i64[]) -> (" + t + ", " + t + ") {\n" +
         "  %0, %1 = dropout_train %x, %step {" + attrs + "} : " + t + ", " + t + "\n" +
         "  return %0, %1\n}\n";
}

std::vector<double> ramp(int count) {
  std::vector<double> x(count);
  for (int i = 0; i < count; ++i) x[i] = 1 + (i % 13);
  return x;
}

constexpr int kLarge = 200000;

TEST(RefDropout, KeepsOneMinusRateScaled) {
  GraphRunner r(dropoutGraph("f32", kLarge, "rate=0.3, seed=11"));
  ASSERT_TRUE(r.ok()) << r.error();
  std::vector<double> x = ramp(kLarge);
  auto outs = r.runValues({x, {5}});
  ASSERT_EQ(outs.size(), 2u);
  int64_t kept = 0;
  float scale = float(1 / (1 - 0.3));
  for (int i = 0; i < kLarge; ++i) {
    double m = outs[1][i];
    ASSERT_TRUE(m == 0 || m == double(scale)) << "mask " << m << " at " << i;
    EXPECT_EQ(outs[0][i], double(float(x[i]) * float(m))) << i;
    kept += m != 0;
  }
  // The standard deviation of the kept fraction is about 0.001.
  EXPECT_NEAR(double(kept) / kLarge, 0.7, 0.006);
}

TEST(RefDropout, RateZeroKeepsEverything) {
  GraphRunner r(dropoutGraph("f64", 1000, "rate=0.0"));
  ASSERT_TRUE(r.ok()) << r.error();
  std::vector<double> x = ramp(1000);
  auto outs = r.runValues({x, {0}});
  EXPECT_EQ(outs[1], std::vector<double>(1000, 1.0));
  EXPECT_EQ(outs[0], x);
}

// Same (seed, step): same mask; another step or seed: another mask, drawn
// independently (the overlap of two kept sets is about (1 - rate)^2).
TEST(RefDropout, MaskIsAFunctionOfSeedAndStep) {
  const int n = 100000;
  GraphRunner a(dropoutGraph("f64", n, "rate=0.5, seed=1"));
  GraphRunner b(dropoutGraph("f64", n, "rate=0.5, seed=2"));
  ASSERT_TRUE(a.ok()) << a.error();
  ASSERT_TRUE(b.ok()) << b.error();
  std::vector<double> x = ramp(n);
  auto step3 = a.runValues({x, {3}})[1];
  auto step4 = a.runValues({x, {4}})[1];
  auto step3Again = a.runValues({x, {3}})[1];
  auto seed2 = b.runValues({x, {3}})[1];
  EXPECT_EQ(step3, step3Again);
  auto overlap = [&](const std::vector<double> &p, const std::vector<double> &q) {
    int both = 0;
    for (int i = 0; i < n; ++i) both += p[i] != 0 && q[i] != 0;
    return double(both) / n;
  };
  EXPECT_NEAR(overlap(step3, step4), 0.25, 0.01);
  EXPECT_NEAR(overlap(step3, seed2), 0.25, 0.01);
}

// f32 and f64 draw the same mask; 1 and 4 threads give identical results.
TEST(RefDropout, IndependentOfThreadsAndType) {
  int saved = omp_get_max_threads();
  std::vector<double> x = ramp(kLarge);
  std::vector<std::vector<double>> masks;
  for (int threads : {1, 4}) {
    GraphRunner r(dropoutGraph("f64", kLarge, "rate=0.25, seed=9"), threads);
    ASSERT_TRUE(r.ok()) << r.error();
    masks.push_back(r.runValues({x, {17}})[1]);
  }
  omp_set_num_threads(saved);
  EXPECT_EQ(masks[0], masks[1]);
  GraphRunner f(dropoutGraph("f32", kLarge, "rate=0.25, seed=9"));
  ASSERT_TRUE(f.ok()) << f.error();
  auto fmask = f.runValues({x, {17}})[1];
  for (int i = 0; i < kLarge; ++i) ASSERT_EQ(fmask[i] != 0, masks[0][i] != 0) << i;
}

// At inference dropout passes its input through.
TEST(RefDropout, InferenceIsIdentity) {
  GraphRunner r("graph @f(%x: f32[5]) -> f32[5] {\n"
                "  %0 = dropout %x {rate=0.5} : f32[5]\n"
                "  return %0\n"
                "}\n");
  ASSERT_TRUE(r.ok()) << r.error();
  std::vector<double> x = {1, -2, 0.5, 3, 0};
  EXPECT_EQ(r.runValues({x})[0], x);
}

// The mask of a fixed (seed, step) never changes, so a training run resumed
// from a checkpoint draws the masks it would have drawn.
TEST(RefDropout, PinnedMask) {
  GraphRunner r(dropoutGraph("f64", 32, "rate=0.5, seed=0"));
  ASSERT_TRUE(r.ok()) << r.error();
  auto mask = r.runValues({ramp(32), {0}})[1];
  std::string bits;
  for (double m : mask) bits += m != 0 ? '1' : '0';
  EXPECT_EQ(bits, "00000100000110000001101110110001");
}

// drop_path_train: one draw a sample, so every element of a sample has the same mask value,
// 0 or 1/(1-rate); about 1-rate of the samples are kept.
TEST(RefDropout, DropPathKeepsWholeSamples) {
  constexpr int kSamples = 20000, kPer = 6;
  std::string t = "f32[" + std::to_string(kSamples) + ",2,3]";
  GraphRunner r("graph @f(%x: " + t + ", %step: i64[]) -> (" + t + ", " + t + ") {\n" +
                "  %0, %1 = drop_path_train %x, %step {rate=0.25, seed=7} : " + t + ", " + t +
                "\n  return %0, %1\n}\n");
  ASSERT_TRUE(r.ok()) << r.error();
  std::vector<double> x = ramp(kSamples * kPer);
  auto outs = r.runValues({x, {2}});
  ASSERT_EQ(outs.size(), 2u);
  float scale = float(1 / (1 - 0.25));
  int kept = 0;
  for (int s = 0; s < kSamples; ++s) {
    double m = outs[1][s * kPer];
    ASSERT_TRUE(m == 0 || m == double(scale)) << "mask " << m << " of sample " << s;
    for (int i = s * kPer; i < (s + 1) * kPer; ++i) {
      ASSERT_EQ(outs[1][i], m) << "sample " << s << " element " << i;
      EXPECT_EQ(outs[0][i], double(float(x[i]) * float(m))) << i;
    }
    kept += m != 0;
  }
  // The standard deviation of the kept fraction is about 0.003.
  EXPECT_NEAR(double(kept) / kSamples, 0.75, 0.02);
}

// drop_path_train after a oneDNN convolution takes the convolution's
// channel-blocked layout as it is (each sample is contiguous there, padding
// included), with no conversion, and masks the same samples as on plain
// buffers: the results equal the reference backend's bit for bit once the
// same convolution results go in.
TEST(RefDropout, DropPathKeepsTheLayoutItArrivesIn) {
  const std::string t = "f32[6,20,5,5]";
  std::string g = "graph @f(%x: f32[6,3,5,5], %w: f32[20,3,3,3], %step: i64[]) -> (" + t + ", " +
                  t + ", " + t + ") {\n  %h = conv2d %x, %w {pad=[1,1,1,1]} : " + t +
                  "\n  %0, %1 = drop_path_train %h, %step {rate=0.5, seed=3} : " + t + ", " + t +
                  "\n  return %h, %0, %1\n}\n";
  GraphRunner onednn(g, 2, "onednn");
  ASSERT_TRUE(onednn.ok()) << onednn.error();
  const runtime::Plan &plan = *onednn.plan();
  bool arrivesBlocked = false;
  for (const runtime::PlanStep &s : plan.steps) {
    if (!s.op || s.op->name() != "drop_path_train") continue;
    const runtime::BufferDesc &x = plan.values[s.in[0]].desc;
    arrivesBlocked = !x.layout.isPlain();
    EXPECT_EQ(plan.values[s.out[0]].desc, x);
    EXPECT_EQ(plan.values[s.out[1]].desc, x);
    for (const runtime::PlanStep &c : plan.steps)
      EXPECT_FALSE(!c.op && c.out[0] == s.in[0]) << "a conversion feeds drop_path_train";
  }
  EXPECT_TRUE(arrivesBlocked) << "oneDNN gave the convolution a plain result; nothing was tested";
  std::vector<double> x(6 * 3 * 5 * 5), w(20 * 3 * 3 * 3);
  for (size_t i = 0; i < x.size(); ++i) x[i] = double(i % 7) - 3;
  for (size_t i = 0; i < w.size(); ++i) w[i] = double(i % 5) * 0.25 - 0.5;
  std::vector<std::vector<double>> got = onednn.runValues({x, w, {5}});
  ASSERT_EQ(got.size(), 3u);
  // The reference backend's drop_path_train on the convolution's result.
  std::string g2 = "graph @f(%h: " + t + ", %step: i64[]) -> (" + t + ", " + t + ") {\n" +
                   "  %0, %1 = drop_path_train %h, %step {rate=0.5, seed=3} : " + t + ", " + t +
                   "\n  return %0, %1\n}\n";
  GraphRunner ref(g2, 1);
  ASSERT_TRUE(ref.ok()) << ref.error();
  std::vector<std::vector<double>> want = ref.runValues({got[0], {5}});
  ASSERT_EQ(want.size(), 2u);
  EXPECT_EQ(got[1], want[0]);
  EXPECT_EQ(got[2], want[1]);
  int dropped = 0;
  for (int s = 0; s < 6; ++s) dropped += got[2][size_t(s) * 500] == 0;
  EXPECT_GT(dropped, 0);
  EXPECT_LT(dropped, 6);
}

} // namespace
} // namespace dtnn::test
