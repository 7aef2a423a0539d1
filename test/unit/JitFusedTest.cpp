// The jit backend's fused kernels against the same ops unfused on the
// reference backend, on random inputs: broadcasting both ways (a broadcast
// operand, a reduction to a smaller shape), every op the jit knows, f32 and
// f64, sizes 0, 1 and not a multiple of any vector width, rows split across
// threads, one long row split across threads, and a reduction over the rows
// (which runs on one thread). The results agree within the rounding of the
// reductions' order, and a kernel gives the same bits at one and two threads.
#include "FusedGraphs.h"
#include "RefRun.h"

#include "runtime/plan/Plan.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

namespace dtnn::test {

namespace {

// Runs `p` fused on the jit (at 1 and 2 threads) and unfused on the
// reference backend, on the same inputs of `types`; expects the jit to run
// the fused op, its results to agree within `tol` relative to the sum of the
// magnitudes each reduces (or to the value), and the two thread counts to
// agree bit for bit.
void expectJitAgrees(const FusedPair &p, const std::vector<ir::TensorType> &types,
                     double tol = 1e-5) {
  std::vector<runtime::Tensor> in;
  for (size_t i = 0; i < types.size(); ++i)
    in.push_back(makeTensor(types[i], fusedTestValues(runtime::numElements(types[i]), 29 + i)));
  GraphRunner ref(p.unfused, 1, "reference"), jit1(p.fused, 1, "jit"), jit2(p.fused, 2, "jit");
  ASSERT_TRUE(ref.ok()) << ref.error() << "\n" << p.unfused;
  ASSERT_TRUE(jit1.ok()) << jit1.error() << "\n" << p.fused;
  ASSERT_TRUE(jit2.ok()) << jit2.error();
  bool onJit = false;
  for (const runtime::PlanStep &s : jit1.plan()->steps)
    if (s.op && s.op->name() == "fused") onJit = s.backend == "jit";
  EXPECT_TRUE(onJit) << "the fused op did not run on the jit\n" << p.fused;
  std::vector<runtime::Tensor> want = ref.run(in), got = jit1.run(in), got2 = jit2.run(in);
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_EQ(want[i].type(), got[i].type());
    std::vector<double> w = toDoubles(want[i]), g = toDoubles(got[i]);
    for (size_t k = 0; k < w.size(); ++k)
      ASSERT_NEAR(g[k], w[k], tol * (1 + std::fabs(w[k]))) << "output " << i << " element " << k
                                                           << "\n" << p.fused;
    EXPECT_EQ(std::memcmp(got[i].data<char>(), got2[i].data<char>(),
                          runtime::byteSize(got[i].type())),
              0)
        << "output " << i << " differs between one and two threads";
  }
}

} // namespace

TEST(JitFused, SqueezeExcitationBackward) {
  for (const char *t : {"f32", "f64"}) {
    FusedPair p = seBackwardPair(t);
    ir::DType d = *ir::parseDType(t);
    expectJitAgrees(p, {{d, {1, 3, 1, 1}}, {d, {1, 3, 5, 7}}, {d, {1, 3, 5, 7}}},
                    d == ir::DType::F64 ? 1e-12 : 1e-5);
  }
}

// Every op the jit knows, in one chain per family, at a size that is not a
// multiple of the vector width.
TEST(JitFused, EveryOp) {
  const std::string t = "f32[1,37]";
  std::vector<std::vector<std::string>> chains = {
      {"%a = add %x, %y {act=\"relu\"} : " + t, "%b = add %a, %y {act=\"sigmoid\"} : " + t,
       "%c = add %b, %x {act=\"tanh\"} : " + t, "%d = add %c, %y {act=\"relu6\"} : " + t,
       "%e = sub %d, %x : " + t, "%f = mul %e, %y : " + t, "%g = add %f, %b : " + t,
       "%r = div %g, %b : " + t},
      {"%a = relu %x : " + t, "%b = relu6 %y : " + t, "%c = leaky_relu %x {alpha=0.1} : " + t,
       "%d = add %a, %b : " + t, "%r = add %d, %c : " + t},
      {"%a = sigmoid %x : " + t, "%b = tanh %y : " + t, "%c = silu %x : " + t,
       "%d = mul %a, %b : " + t, "%r = add %d, %c : " + t},
      {"%a = hard_sigmoid %x : " + t, "%b = hard_swish %y : " + t,
       "%c = scale %x {factor=0.5} : " + t, "%d = add %a, %b : " + t, "%r = add %d, %c : " + t},
      {"%a = relu_backward %x, %y : " + t, "%b = relu6_backward %x, %y : " + t,
       "%c = leaky_relu_backward %x, %y {alpha=0.2} : " + t, "%d = add %a, %b : " + t,
       "%r = add %d, %c : " + t},
      {"%a = sigmoid_backward %x, %y : " + t, "%b = tanh_backward %x, %y : " + t,
       "%c = silu_backward %x, %y : " + t, "%d = add %a, %b : " + t, "%r = add %d, %c : " + t},
      {"%a = hard_sigmoid_backward %x, %y : " + t, "%b = hard_swish_backward %x, %y : " + t,
       "%r = add %a, %b : " + t},
      {"%a = mul %x, %x : " + t, "%b = rsqrt %a {eps=0.001} : " + t, "%r = mul %b, %y : " + t},
      {"%a = mul %x, %x : " + t, "%b = sqrt %a : " + t, "%r = mul %b, %y : " + t},
      {"%a = mul %x, %x : " + t, "%b = log %a : " + t, "%c = erf %x : " + t,
       "%d = add %b, %c : " + t, "%e = pow %a {exponent=1.5} : " + t, "%f = exp %y : " + t,
       "%g = mul %e, %f : " + t, "%r = add %d, %g : " + t},
  };
  for (const auto &chain : chains) {
    // div divides by a sigmoid's result, which stays away from 0.
    FusedPair p = fusedPair({{"x", t}, {"y", t}}, chain, {"r"}, {t});
    expectJitAgrees(p, {{ir::DType::F32, {1, 37}}, {ir::DType::F32, {1, 37}}}, 1e-4);
  }
}

// The transcendental ops (the jit computes e^x in arithmetic of its own) in
// f32 and f64, over small and saturating arguments (up to +-100): within the
// type's rounding of the reference's std::exp and std::tanh.
TEST(JitFused, TranscendentalsAtBothTypes) {
  for (const char *dtype : {"f32", "f64"}) {
    std::string t = std::string(dtype) + "[1,301]";
    for (double factor : {1.0, 50.0}) {
      std::string f = std::to_string(factor);
      FusedPair p = fusedPair({{"x", t}, {"y", t}},
                              {"%z = scale %x {factor=" + f + "} : " + t, "%a = sigmoid %z : " + t,
                               "%b = tanh %z : " + t, "%c = silu %z : " + t,
                               "%d = silu_backward %y, %z : " + t, "%e = add %a, %b : " + t,
                               "%g = add %e, %c : " + t, "%r = add %g, %d : " + t},
                              {"r"}, {t});
      ir::DType d = *ir::parseDType(dtype);
      expectJitAgrees(p, {{d, {1, 301}}, {d, {1, 301}}}, d == ir::DType::F64 ? 1e-13 : 1e-6);
    }
  }
}

// Non-finite and huge arguments: e^x saturates, and a NaN stays NaN, as the
// reference's std::exp and std::tanh give.
TEST(JitFused, NonFiniteArguments) {
  const std::string t = "f32[1,8]";
  FusedPair p = fusedPair({{"x", t}},
                          {"%a = sigmoid %x : " + t, "%b = tanh %x : " + t, "%c = silu %x : " + t,
                           "%d = silu_backward %x, %x : " + t},
                          {"a", "b", "c", "d"}, {t, t, t, t});
  double inf = std::numeric_limits<double>::infinity();
  std::vector<double> x = {std::nan(""), inf, -inf, 0, 1e30, -1e30, 88.5, -88.5};
  runtime::Tensor in = makeTensor({ir::DType::F32, {1, 8}}, x);
  GraphRunner ref(p.unfused, 1, "reference"), jit(p.fused, 1, "jit");
  ASSERT_TRUE(ref.ok() && jit.ok()) << ref.error() << jit.error();
  std::vector<runtime::Tensor> want = ref.run({in}), got = jit.run({in});
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size(); ++i) {
    std::vector<double> w = toDoubles(want[i]), g = toDoubles(got[i]);
    for (size_t k = 0; k < w.size(); ++k) {
      if (std::isnan(w[k]) || std::isnan(g[k])) {
        EXPECT_EQ(std::isnan(w[k]), std::isnan(g[k])) << "output " << i << " at x = " << x[k];
        continue;
      }
      if (std::isinf(w[k])) {
        EXPECT_EQ(g[k], w[k]) << "output " << i << " at x = " << x[k];
        continue;
      }
      EXPECT_NEAR(g[k], w[k], 1e-6 * (1 + std::fabs(w[k]))) << "output " << i << " at x = " << x[k];
    }
  }
}

// Broadcasting both ways: a row vector and a column vector into a matrix.
TEST(JitFused, BroadcastBothWays) {
  FusedPair p = fusedPair({{"r", "f32[1,1,9]"}, {"c", "f32[1,13,1]"}},
                          {"%s = add %r, %c : f32[1,13,9]", "%m = mul %s, %c : f32[1,13,9]"}, {"m"},
                          {"f32[1,13,9]"});
  expectJitAgrees(p, {{ir::DType::F32, {1, 1, 9}}, {ir::DType::F32, {1, 13, 1}}});
}

// bf16 in a region: arguments loaded widened, casts, an op whose bf16 result is rounded in
// registers as the reference stores it, a float32 reduction, and bf16 and f32 yields, with the
// reference's bits (tol 1e-6 is far below one bf16 step, 2^-8).
TEST(JitFused, Bf16LoadsStoresAndRounding) {
  FusedPair p = fusedPair({{"x", "bf16[2,37,33]"}, {"s", "f32[1,37,1]"}},
                          {"%c = cast %x {to=\"f32\"} : f32[2,37,33]",
                           "%m = mul %c, %s : f32[2,37,33]", "%r = relu %m : f32[2,37,33]",
                           "%b = cast %r {to=\"bf16\"} : bf16[2,37,33]",
                           "%a = add %b, %x : bf16[2,37,33]", "%l = sum_like %m, %s : f32[1,37,1]"},
                          {"a", "l", "r"}, {"bf16[2,37,33]", "f32[1,37,1]", "f32[2,37,33]"});
  expectJitAgrees(p, {{ir::DType::BF16, {2, 37, 33}}, {ir::DType::F32, {1, 37, 1}}}, 1e-6);
}

// Sizes 0 and 1.
TEST(JitFused, EmptyAndSingleElement) {
  for (int64_t n : {0, 1}) {
    std::string t = "f32[1," + std::to_string(n) + "]";
    FusedPair p = fusedPair({{"x", t}, {"y", t}}, {"%s = add %x, %y : " + t, "%r = relu %s : " + t},
                            {"r"}, {t});
    expectJitAgrees(p, {{ir::DType::F32, {1, n}}, {ir::DType::F32, {1, n}}});
  }
}

// Many rows (split across threads), one long row (its inner loop split), and
// a reduction over the rows (one thread).
TEST(JitFused, ThreadSplits) {
  FusedPair rows = fusedPair({{"x", "f32[1,96,700]"}, {"b", "f32[96,1]"}},
                             {"%s = add %x, %b : f32[1,96,700]", "%r = tanh %s : f32[1,96,700]"},
                             {"r"}, {"f32[1,96,700]"});
  expectJitAgrees(rows, {{ir::DType::F32, {1, 96, 700}}, {ir::DType::F32, {96, 1}}});
  FusedPair row = fusedPair({{"x", "f32[1,70000]"}, {"y", "f32[1,70000]"}},
                            {"%s = mul %x, %y : f32[1,70000]", "%r = sigmoid %s : f32[1,70000]"},
                            {"r"}, {"f32[1,70000]"});
  expectJitAgrees(row, {{ir::DType::F32, {1, 70000}}, {ir::DType::F32, {1, 70000}}});
  FusedPair bias = fusedPair({{"x", "f32[1,300,70]"}, {"like", "f32[70]"}},
                             {"%g = relu %x : f32[1,300,70]", "%s = sum_like %g, %like : f32[70]"},
                             {"s"}, {"f32[70]"});
  expectJitAgrees(bias, {{ir::DType::F32, {1, 300, 70}}, {ir::DType::F32, {70}}}, 1e-4);
  // The same over ten times the rows, and a sum of one long row: cut into
  // pieces whose partial sums are added in order, the same bits at one and
  // two threads.
  FusedPair rowsSum = fusedPair({{"x", "f32[1,3000,70]"}, {"like", "f32[70]"}},
                                {"%g = relu %x : f32[1,3000,70]",
                                 "%s = sum_like %g, %like : f32[70]"},
                                {"s", "g"}, {"f32[70]", "f32[1,3000,70]"});
  expectJitAgrees(rowsSum, {{ir::DType::F32, {1, 3000, 70}}, {ir::DType::F32, {70}}}, 1e-4);
  FusedPair total = fusedPair({{"x", "f64[1,100003]"}, {"like", "f64[1,1]"}},
                              {"%g = tanh %x : f64[1,100003]", "%s = sum_like %g, %like : f64[1,1]"},
                              {"s"}, {"f64[1,1]"});
  expectJitAgrees(total, {{ir::DType::F64, {1, 100003}}, {ir::DType::F64, {1, 1}}}, 1e-12);
  // A reduction over a middle dimension (per-channel sums of channel-blocked
  // planes): the rows split between threads only between whole groups of
  // rows that sum into one place.
  FusedPair mid = fusedPair({{"x", "f32[12,700,16]"}, {"s", "f32[12,1,16]"}},
                            {"%p = mul %x, %s : f32[12,700,16]",
                             "%r = sum_like %p, %s : f32[12,1,16]"},
                            {"p", "r"}, {"f32[12,700,16]", "f32[12,1,16]"});
  expectJitAgrees(mid, {{ir::DType::F32, {12, 700, 16}}, {ir::DType::F32, {12, 1, 16}}}, 1e-4);
}

// Eight kernels of one plan, distinct regions (each scale factor is a
// constant of its code): planning starts all eight on the compile threads at
// once, and the first run waits for each when it gets to it. Each agrees with
// the reference interpreter.
TEST(JitFused, KernelsOfAPlanCompileTogether) {
  const std::string t = "f32[1,37]";
  std::string text = "graph @f(%x: " + t + ") -> (";
  for (int k = 0; k < 8; ++k) text += (k ? ", " : "") + t;
  text += ") {\n";
  for (int k = 0; k < 8; ++k)
    text += "  %" + std::to_string(k) + " = fused %x : " + t + " {\n    (%x0: " + t +
            ")\n    %0 = scale %x0 {factor=" + std::to_string(k + 1) + ".5} : " + t +
            "\n    %1 = tanh %0 : " + t + "\n    yield %1\n  }\n";
  text += "  return %0, %1, %2, %3, %4, %5, %6, %7\n}\n";
  GraphRunner ref(text, 1, "reference"), jit(text, 2, "jit");
  ASSERT_TRUE(ref.ok()) << ref.error() << "\n" << text;
  ASSERT_TRUE(jit.ok()) << jit.error();
  int onJit = 0;
  for (const runtime::PlanStep &s : jit.plan()->steps) onJit += s.op && s.backend == "jit";
  EXPECT_EQ(onJit, 8);
  std::vector<runtime::Tensor> in = {makeTensor({ir::DType::F32, {1, 37}}, fusedTestValues(37, 3))};
  std::vector<runtime::Tensor> want = ref.run(in), got = jit.run(in);
  ASSERT_EQ(want.size(), 8u);
  ASSERT_EQ(got.size(), 8u);
  for (size_t i = 0; i < want.size(); ++i) {
    std::vector<double> w = toDoubles(want[i]), g = toDoubles(got[i]);
    for (size_t k = 0; k < w.size(); ++k)
      ASSERT_NEAR(g[k], w[k], 1e-5 * (1 + std::fabs(w[k]))) << "output " << i << " element " << k;
  }
}

} // namespace dtnn::test
