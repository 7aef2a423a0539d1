// The jit's fused kernels in the layouts oneDNN chose: a region whose
// operands come from convolutions reads them in oneDNN's blocked channel
// layout, with a per-channel operand indexed through the block, so that no
// conversion surrounds it; channel counts that fill whole blocks and ones
// that leave padded lanes, a per-channel operand plain or blocked, and a
// reduction to per-channel sums. The results agree with the reference
// backend running the same graph, at one and two threads bit for bit.
#include "FusedGraphs.h"
#include "RefRun.h"

#include "runtime/plan/Plan.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

namespace dtnn::test {

namespace {

// Graph @f: h and dy from two 3x3 convolutions of x (C channels, in the
// layout oneDNN picks), then one fused op over s (of type `sType`), h and dy
// with the region `body` (IR lines over %s, %h, %dy) yielding `yields`.
std::string convThenFused(int64_t c, const std::string &sType,
                          const std::vector<std::string> &body,
                          const std::vector<std::pair<std::string, std::string>> &yields) {
  std::string t = "f32[1," + std::to_string(c) + ",5,7]";
  std::string w = "f32[" + std::to_string(c) + ",3,3,3]";
  std::string outTypes, results, names;
  for (size_t i = 0; i < yields.size(); ++i) {
    outTypes += (i ? ", " : "") + yields[i].second;
    results += (i ? ", %r" : "%r") + std::to_string(i);
    names += (i ? ", %" : "%") + yields[i].first;
  }
  std::string g = "graph @f(%x: f32[1,3,5,7], %w: " + w + ", %v: " + w + ", %s: " + sType +
                  ") -> (" + outTypes + ") {\n";
  g += "  %h = conv2d %x, %w {pad=[1,1,1,1]} : " + t + "\n";
  g += "  %dy = conv2d %x, %v {pad=[1,1,1,1]} : " + t + "\n";
  g += "  " + results + " = fused %s, %h, %dy : " + outTypes + " {\n";
  g += "    (%s: " + sType + ", %h: " + t + ", %dy: " + t + ")\n";
  for (const std::string &l : body) g += "    " + l + "\n";
  g += "    yield " + names + "\n  }\n  return " + results + "\n}\n";
  return g;
}

// The plan's fused step and how many of its operands a conversion makes.
struct FusedStep {
  const runtime::PlanStep *step = nullptr;
  int conversionsBefore = 0;
};
FusedStep fusedStepOf(const runtime::Plan &plan) {
  FusedStep f;
  for (const runtime::PlanStep &s : plan.steps)
    if (s.op && s.op->name() == "fused") f.step = &s;
  if (!f.step) return f;
  for (const runtime::PlanStep &s : plan.steps)
    if (!s.op)
      for (int id : f.step->in) f.conversionsBefore += s.out[0] == id;
  return f;
}

// Runs graph `g` on oneDNN and the jit (one and two threads) and on the
// reference backend; expects the fused op on the jit, h and dy read where
// the convolutions left them (in a blocked layout when `blocked`), no more
// than `maxConversions` conversions of the fused op's operands, and the results to
// agree.
void expectAgrees(const std::string &g, bool blocked, int maxConversions) {
  int64_t c = 0;
  std::vector<runtime::Tensor> in;
  GraphRunner ref(g, 1, "reference"), jit1(g, 1, "onednn"), jit2(g, 2, "onednn");
  ASSERT_TRUE(ref.ok()) << ref.error() << "\n" << g;
  ASSERT_TRUE(jit1.ok()) << jit1.error() << "\n" << g;
  ASSERT_TRUE(jit2.ok()) << jit2.error();
  const runtime::Plan &plan = *jit1.plan();
  FusedStep f = fusedStepOf(plan);
  ASSERT_NE(f.step, nullptr);
  EXPECT_EQ(f.step->backend, "jit") << g;
  EXPECT_LE(f.conversionsBefore, maxConversions) << g;
  const runtime::BufferDesc &h = plan.values[f.step->in[1]].desc;
  EXPECT_EQ(!h.layout.isPlain(), blocked) << h.str() << "\n" << g;
  EXPECT_EQ(plan.values[f.step->in[1]].desc, plan.values[f.step->in[2]].desc);
  for (const runtime::PlanStep &s : plan.steps)
    if (s.op && s.op->name() == "conv2d") EXPECT_EQ(s.backend, "onednn");
  c = plan.values[f.step->in[1]].desc.type.dims[1];
  std::vector<ir::TensorType> types = {{ir::DType::F32, {1, 3, 5, 7}},
                                       {ir::DType::F32, {c, 3, 3, 3}},
                                       {ir::DType::F32, {c, 3, 3, 3}},
                                       plan.values[f.step->in[0]].desc.type};
  for (size_t i = 0; i < types.size(); ++i)
    in.push_back(makeTensor(types[i], fusedTestValues(runtime::numElements(types[i]), 41 + i)));
  std::vector<runtime::Tensor> want = ref.run(in), got = jit1.run(in), got2 = jit2.run(in);
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size(); ++i) {
    std::vector<double> w = toDoubles(want[i]), v = toDoubles(got[i]);
    ASSERT_EQ(w.size(), v.size());
    for (size_t k = 0; k < w.size(); ++k)
      ASSERT_NEAR(v[k], w[k], 1e-4 * (1 + std::fabs(w[k]))) << "output " << i << " element " << k
                                                            << "\n" << g;
    EXPECT_EQ(std::memcmp(got[i].data<char>(), got2[i].data<char>(),
                          runtime::byteSize(got[i].type())),
              0)
        << "output " << i << " differs between one and two threads";
  }
}

// The backward of a squeeze-and-excitation multiply: dh = dy * s and
// ds = the sum of dy * h over the plane.
std::vector<std::string> seBackward(const std::string &t, const std::string &sType) {
  return {"%dh = mul %dy, %s : " + t, "%p = mul %dy, %h : " + t,
          "%ds = sum_like %p, %s : " + sType};
}

std::string planeType(int64_t c) { return "f32[1," + std::to_string(c) + ",5,7]"; }
std::string channelType(int64_t c) { return "f32[1," + std::to_string(c) + ",1,1]"; }

} // namespace

// Whole blocks: the per-channel operand is read plain through the block, and
// nothing is converted before the kernel.
TEST(JitLayout, PerChannelOperandPlainThroughTheBlock) {
  std::string t = planeType(32), s = channelType(32);
  expectAgrees(convThenFused(32, s, seBackward(t, s), {{"dh", t}, {"ds", s}}), true, 0);
}

// Padded lanes (36 channels in blocks of 8 or 16): the per-channel operand
// and the per-channel sums take the blocked layout too.
TEST(JitLayout, PaddedBlocks) {
  std::string t = planeType(36), s = channelType(36);
  expectAgrees(convThenFused(36, s, seBackward(t, s), {{"dh", t}, {"ds", s}}), true, 1);
  expectAgrees(convThenFused(36, s,
                             {"%m = mul %h, %s : " + t, "%a = add %m, %dy {act=\"relu\"} : " + t,
                              "%y = sigmoid %a : " + t},
                             {{"y", t}}),
               true, 1);
}

// Sums over the channels (across the lanes of each block) and over the
// plane, both from blocked planes, and a per-position operand read plain.
TEST(JitLayout, SumsAcrossTheLanes) {
  std::string t = planeType(32), pos = "f32[1,1,5,7]";
  expectAgrees(convThenFused(32, pos,
                             {"%p = mul %dy, %h : " + t, "%q = mul %p, %s : " + t,
                              "%r = sum_like %q, %s : " + pos},
                             {{"r", pos}}),
               true, 0);
}

// An operand of another rank, which oneDNN cannot arrange like the planes
// when lanes are padded: the kernel runs on plain buffers instead.
TEST(JitLayout, OtherRankFallsBackToPlain) {
  std::string t = planeType(36), b = "f32[36,1,1]";
  expectAgrees(convThenFused(36, b, {"%m = mul %h, %s : " + t, "%y = add %m, %dy : " + t},
                             {{"y", t}}),
               false, 3);
}

// The math ops in a block of lanes, the library's log, erf and pow called
// lane by lane: whole blocks stay blocked; over padded lanes a region that
// takes a logarithm would fill them with -inf, so it runs on plain buffers,
// while one that stays finite at zero (erf, exp, a positive power) keeps
// the blocked layout.
TEST(JitLayout, MathOps) {
  for (int64_t c : {32, 36}) {
    std::string t = planeType(c), s = channelType(c);
    std::vector<std::string> finite = {"%a = erf %h : " + t, "%b = exp %dy : " + t,
                                       "%e = pow %h {exponent=2.0} : " + t,
                                       "%f = add %a, %b : " + t, "%y = mul %f, %e : " + t};
    expectAgrees(convThenFused(c, s, finite, {{"y", t}}), true, c == 32 ? 0 : 1);
    std::vector<std::string> logs = {"%e = exp %h : " + t, "%a = mul %h, %h : " + t,
                                     "%b = add %e, %a : " + t, "%l = log %b : " + t,
                                     "%y = mul %l, %s : " + t};
    expectAgrees(convThenFused(c, s, logs, {{"y", t}}), c == 32, c == 32 ? 0 : 3);
  }
}

} // namespace dtnn::test
