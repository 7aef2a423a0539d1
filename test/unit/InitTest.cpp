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
            std::vector<std::string>({"constant", "embedding", "glorot_normal", "glorot_uniform",
                                      "he_normal", "he_uniform", "kaiming_normal",
                                      "kaiming_uniform",
                                      "lecun_normal", "lecun_uniform", "normal", "ones",
                                      "trunc_normal", "uniform", "xavier_normal",
                                      "xavier_uniform", "zeros"}));
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

// torch.nn.init's initializers with their arguments: the distribution each draws from.
TEST(InitTest, WithArguments) {
  TensorType t(DType::F32, {1000, 500}); // fan_in 500, fan_out 1000
  struct Case {
    const char *spec;
    double mean, std, lo, hi; // the draws' mean and std, and bounds they stay within
  } cases[] = {
      {"normal(std=0.02)", 0, 0.02, -1, 1},
      {"normal(0.5, 0.1)", 0.5, 0.1, -1, 2},
      {"uniform(-0.1, 0.3)", 0.1, 0.4 / std::sqrt(12.0), -0.1, 0.3},
      {"trunc_normal(std=1, a=-1, b=1)", 0, 0.5396, -1, 1}, // N(0,1) cut at one deviation
      {"kaiming_normal(mode=fan_out)", 0, std::sqrt(2.0 / 1000), -1, 1},
      {"kaiming_uniform(a=2.2360679775)", 0, 1 / std::sqrt(3.0 * 500), -1 / std::sqrt(500.0),
       1 / std::sqrt(500.0)},
      {"kaiming_normal(nonlinearity=tanh)", 0, 5.0 / 3 / std::sqrt(500.0), -1, 1},
      {"xavier_uniform(gain=2)", 0, 2 * std::sqrt(2.0 / 1500), -2 * std::sqrt(6.0 / 1500),
       2 * std::sqrt(6.0 / 1500)},
      {"xavier_normal", 0, std::sqrt(2.0 / 1500), -1, 1},
  };
  for (const Case &c : cases) {
    Tensor v = init(c.spec, t);
    Moments m = moments<float>(v);
    EXPECT_NEAR(m.mean, c.mean, 5 * c.std / std::sqrt(5e5) + 1e-7) << c.spec;
    EXPECT_NEAR(m.std, c.std, 0.01 * c.std) << c.spec;
    for (int64_t i = 0; i < v.numel(); ++i) {
      ASSERT_GE(v.data<float>()[i], c.lo) << c.spec;
      ASSERT_LE(v.data<float>()[i], c.hi) << c.spec;
    }
  }
  // nn.Embedding's: N(0, 1) with the padding row zero.
  Tensor e = init("embedding(padding_idx=1)", TensorType(DType::F32, {3, 4}));
  for (int64_t i = 0; i < 12; ++i) EXPECT_EQ(e.data<float>()[i] == 0.0f, i / 4 == 1) << i;
  Tensor k = init("constant(0.25)", TensorType(DType::F32, {3}));
  for (int64_t i = 0; i < 3; ++i) EXPECT_EQ(k.data<float>()[i], 0.25f);
  // The names without arguments draw as before: he_uniform is kaiming_uniform's default.
  EXPECT_TRUE(sameBytes(init("he_uniform", t), init("kaiming_uniform", t)));
  EXPECT_TRUE(sameBytes(init("glorot_normal", t), init("xavier_normal(gain=1)", t)));
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
            "initializers: constant embedding glorot_normal glorot_uniform he_normal he_uniform "
            "kaiming_normal kaiming_uniform lecun_normal lecun_uniform normal ones trunc_normal "
            "uniform xavier_normal xavier_uniform zeros)");
  EXPECT_EQ(initializeParam("orthogonal", t, 0, "w", out).message(),
            "parameter @w: unknown initializer 'orthogonal' (known initializers: constant "
            "embedding glorot_normal glorot_uniform he_normal he_uniform kaiming_normal "
            "kaiming_uniform lecun_normal lecun_uniform normal ones trunc_normal uniform "
            "xavier_normal xavier_uniform zeros)");
  EXPECT_EQ(initializeParam("normal(sd=1)", t, 0, "w", out).message(),
            "parameter @w: initializer 'normal' has no argument 'sd' (arguments: mean, std)");
  EXPECT_EQ(initializeParam("normal(0, -1)", t, 0, "w", out).message(),
            "parameter @w: initializer 'normal' needs std > 0");
  EXPECT_EQ(initializeParam("constant", t, 0, "w", out).message(),
            "parameter @w: initializer 'constant' needs argument 'val'");
  EXPECT_EQ(initializeParam("uniform(1, 0)", t, 0, "w", out).message(),
            "parameter @w: initializer 'uniform' needs a < b");
  EXPECT_EQ(initializeParam("kaiming_normal(mode=fan)", t, 0, "w", out).message(),
            "parameter @w: argument 'mode' of 'kaiming_normal' must be fan_in or fan_out, got "
            "'fan'");
  EXPECT_EQ(initializeParam("kaiming_normal(nonlinearity=gelu)", t, 0, "w", out).message(),
            "parameter @w: argument 'nonlinearity' of 'kaiming_normal' must be a nonlinearity "
            "torch.nn.init.calculate_gain knows (linear, conv1d, conv2d, conv3d, sigmoid, tanh, "
            "relu, leaky_relu, selu), got 'gelu'");
  EXPECT_EQ(initializeParam("normal(std=x)", t, 0, "w", out).message(),
            "parameter @w: argument 'std' of 'normal' must be a number, got 'x'");
  EXPECT_EQ(initializeParam("normal(1, 2, 3)", t, 0, "w", out).message(),
            "parameter @w: initializer 'normal' takes 2 arguments (mean, std)");
  EXPECT_EQ(initializeParam("normal(std=1, std=2)", t, 0, "w", out).message(),
            "parameter @w: argument 'std' of 'normal' is given twice");
  EXPECT_EQ(initializeParam("normal(std=1", t, 0, "w", out).message(),
            "parameter @w: initializer 'normal(std=1' must end with ')'");
  EXPECT_EQ(
      initializeParam("zeros", TensorType(DType::F32, {ir::kDynamic, 3}), 0, "w", out).message(),
      "parameter @w: cannot initialize f32[?,3], whose shape is not static");
  EXPECT_EQ(initializeParam("zeros", TensorType(DType::I32, {3}), 0, "w", out).message(),
            "parameter @w: cannot initialize i32[3]; initializers fill f32 and f64 tensors");
}
