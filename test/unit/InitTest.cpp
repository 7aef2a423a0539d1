// Tests of the runtime's random number generator and the parameter
// initializers: determinism, independence of parameters, the bounds and
// moments of each distribution, f32 and f64, and the error messages.
#include "runtime/Init.h"
#include "runtime/Random.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

using namespace dtnn;
using namespace dtnn::runtime;
using ir::DType;
using ir::TensorType;

namespace {

Tensor init(const std::string &name, const TensorType &t, uint64_t seed = 7,
            const std::string &param = "dense.0.weight") {
  Tensor out;
  Error e = initializeParam(name, t, seed, param, out);
  EXPECT_FALSE(e) << e.message();
  return out;
}

bool sameBytes(const Tensor &a, const Tensor &b) {
  return a.type() == b.type() && std::memcmp(a.raw(), b.raw(), a.bytes()) == 0;
}

struct Moments {
  double mean = 0, std = 0, maxAbs = 0;
};

template <typename T> Moments moments(const Tensor &t) {
  Moments m;
  const T *p = t.data<T>();
  for (int64_t i = 0; i < t.numel(); ++i) m.mean += p[i];
  m.mean /= double(t.numel());
  for (int64_t i = 0; i < t.numel(); ++i) {
    m.std += (p[i] - m.mean) * (p[i] - m.mean);
    m.maxAbs = std::max(m.maxAbs, std::abs(double(p[i])));
  }
  m.std = std::sqrt(m.std / double(t.numel()));
  return m;
}

} // namespace

TEST(RandomTest, StableHashIsFnv1a) {
  EXPECT_EQ(stableHash(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(stableHash("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(stableHash("foobar"), 0x85944171f73967e8ull);
}

TEST(RandomTest, DeterministicStreams) {
  Random a(42), b(42), c(43);
  std::vector<uint64_t> xs, ys, zs;
  for (int i = 0; i < 8; ++i) {
    xs.push_back(a.next());
    ys.push_back(b.next());
    zs.push_back(c.next());
  }
  EXPECT_EQ(xs, ys);
  EXPECT_NE(xs, zs);
  Random s1(42, 1), s2(42, 2);
  EXPECT_NE(s1.next(), s2.next());
}

TEST(RandomTest, UniformAndNormalMoments) {
  Random r(1);
  const int n = 200000;
  double sum = 0, sumSq = 0, nsum = 0, nsumSq = 0;
  for (int i = 0; i < n; ++i) {
    double u = r.uniform();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    sum += u;
    sumSq += u * u;
    double z = r.normal();
    ASSERT_TRUE(std::isfinite(z));
    nsum += z;
    nsumSq += z * z;
  }
  EXPECT_NEAR(sum / n, 0.5, 0.005);
  EXPECT_NEAR(sumSq / n - 0.25, 1.0 / 12.0, 0.002);
  EXPECT_NEAR(nsum / n, 0.0, 0.01);
  EXPECT_NEAR(nsumSq / n, 1.0, 0.01);
}

TEST(RandomTest, StateRoundTrip) {
  Random a(9);
  a.next();
  std::string s = a.state();
  EXPECT_EQ(s.size(), 4u * 16u + 3u);
  Random b(0);
  ASSERT_FALSE(b.restore(s));
  EXPECT_EQ(b.words(), a.words());
  for (int i = 0; i < 4; ++i) EXPECT_EQ(a.next(), b.next());
  EXPECT_EQ(a.normal(), b.normal());
}

TEST(RandomTest, RestoreErrors) {
  Random r(3);
  std::string before = r.state();
  EXPECT_EQ(r.restore("1 2 3 4").message(),
            "random state: word 1 is not a 16-digit hexadecimal number");
  std::string zero(16, '0');
  EXPECT_EQ(r.restore(zero + " " + zero + " " + zero + " " + zero).message(),
            "random state: all words are zero, which is not a valid state");
  EXPECT_EQ(r.restore(before + " x").message(),
            "random state: unexpected text after the fourth word");
  EXPECT_EQ(r.restore(before.substr(0, 33)).message(),
            "random state: expected four words separated by spaces");
  EXPECT_EQ(r.state(), before);
}

TEST(InitTest, Names) {
  EXPECT_EQ(initializerNames(),
            std::vector<std::string>({"glorot_normal", "glorot_uniform", "he_normal", "he_uniform",
                                      "lecun_normal", "lecun_uniform", "ones", "zeros"}));
}

TEST(InitTest, Fans) {
  EXPECT_EQ(computeFans({10, 20}).in, 20);
  EXPECT_EQ(computeFans({10, 20}).out, 10);
  EXPECT_EQ(computeFans({16, 8, 3, 3}).in, 72);
  EXPECT_EQ(computeFans({16, 8, 3, 3}).out, 144);
  EXPECT_EQ(computeFans({6}).in, 6);
  EXPECT_EQ(computeFans({6}).out, 6);
  EXPECT_EQ(computeFans({}).in, 1);
}

TEST(InitTest, DeterministicAndPerName) {
  TensorType t(DType::F32, {8, 4});
  Tensor a = init("he_uniform", t, 7, "w1");
  EXPECT_TRUE(sameBytes(a, init("he_uniform", t, 7, "w1")));
  EXPECT_FALSE(sameBytes(a, init("he_uniform", t, 8, "w1")));
  EXPECT_FALSE(sameBytes(a, init("he_uniform", t, 7, "w2")));
  // A parameter's values depend only on the seed, its name and its type, not
  // on which parameters were initialized before it.
  init("he_uniform", TensorType(DType::F32, {100, 100}), 7, "w0");
  EXPECT_TRUE(sameBytes(a, init("he_uniform", t, 7, "w1")));
}

TEST(InitTest, UniformBounds) {
  struct Case {
    const char *name;
    TensorType type;
    double bound;
  } cases[] = {
      {"he_uniform", TensorType(DType::F32, {64, 128}), std::sqrt(6.0 / 128)},
      {"glorot_uniform", TensorType(DType::F32, {16, 8, 3, 3}), std::sqrt(6.0 / (72 + 144))},
      {"lecun_uniform", TensorType(DType::F64, {32, 50}), std::sqrt(3.0 / 50)},
  };
  for (const Case &c : cases) {
    Tensor t = init(c.name, c.type);
    Moments m = c.type.dtype == DType::F32 ? moments<float>(t) : moments<double>(t);
    EXPECT_LE(m.maxAbs, c.bound) << c.name;
    EXPECT_GT(m.maxAbs, 0.95 * c.bound) << c.name;
    // A uniform distribution on [-b, b] has standard deviation b / sqrt(3).
    EXPECT_NEAR(m.std, c.bound / std::sqrt(3.0), 0.05 * c.bound) << c.name;
  }
}

TEST(InitTest, NormalMoments) {
  struct Case {
    const char *name;
    double std;
  } cases[] = {
      {"he_normal", std::sqrt(2.0 / 500)},
      {"glorot_normal", std::sqrt(2.0 / 1500)},
      {"lecun_normal", std::sqrt(1.0 / 500)},
  };
  TensorType t(DType::F32, {1000, 500});
  for (const Case &c : cases) {
    Moments m = moments<float>(init(c.name, t));
    EXPECT_NEAR(m.mean, 0.0, 4 * c.std / std::sqrt(5e5)) << c.name;
    EXPECT_NEAR(m.std, c.std, 0.01 * c.std) << c.name;
    // Not truncated: values beyond two standard deviations occur.
    EXPECT_GT(m.maxAbs, 3 * c.std) << c.name;
  }
}

TEST(InitTest, F64MatchesF32) {
  Tensor f = init("glorot_normal", TensorType(DType::F32, {5, 7}));
  Tensor d = init("glorot_normal", TensorType(DType::F64, {5, 7}));
  for (int64_t i = 0; i < f.numel(); ++i)
    EXPECT_EQ(f.data<float>()[i], static_cast<float>(d.data<double>()[i]));
}

TEST(InitTest, Constants) {
  Tensor z = init("zeros", TensorType(DType::F64, {3}));
  Tensor o = init("ones", TensorType(DType::F32, {2, 2}));
  for (int64_t i = 0; i < z.numel(); ++i) EXPECT_EQ(z.data<double>()[i], 0.0);
  for (int64_t i = 0; i < o.numel(); ++i) EXPECT_EQ(o.data<float>()[i], 1.0f);
  // A tensor of the wrong type is replaced; one of the right type is refilled.
  Tensor out(TensorType(DType::F32, {2, 2}));
  ASSERT_FALSE(initializeParam("ones", TensorType(DType::F64, {3}), 0, "b", out));
  EXPECT_EQ(out.type(), TensorType(DType::F64, {3}));
  EXPECT_EQ(out.data<double>()[2], 1.0);
  Tensor scalar = init("ones", TensorType(DType::F32, {}));
  EXPECT_EQ(scalar.data<float>()[0], 1.0f);
}

TEST(InitTest, ErrorMessages) {
  Tensor out;
  TensorType t(DType::F32, {4, 3});
  EXPECT_EQ(initializeParam("he_unifrom", t, 0, "w", out).message(),
            "parameter @w: unknown initializer 'he_unifrom'; did you mean 'he_uniform'? (known "
            "initializers: glorot_normal glorot_uniform he_normal he_uniform lecun_normal "
            "lecun_uniform ones zeros)");
  EXPECT_EQ(initializeParam("orthogonal", t, 0, "w", out).message(),
            "parameter @w: unknown initializer 'orthogonal' (known initializers: glorot_normal "
            "glorot_uniform he_normal he_uniform lecun_normal lecun_uniform ones zeros)");
  EXPECT_EQ(
      initializeParam("zeros", TensorType(DType::F32, {ir::kDynamic, 3}), 0, "w", out).message(),
      "parameter @w: cannot initialize f32[?,3], whose shape is not static");
  EXPECT_EQ(initializeParam("zeros", TensorType(DType::I32, {3}), 0, "w", out).message(),
            "parameter @w: cannot initialize i32[3]; initializers fill f32 and f64 tensors");
}
