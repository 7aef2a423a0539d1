// Differential tests: every kernel of every non-reference backend, forward
// and backward, against the reference backend on random shapes and
// attributes (fixed seeds), within bounds derived per op family from
// float32 error analysis (see Differential.h for how a case runs). This
// file holds the tests: one per op family, running the cases that
// DiffConvDense.cpp, DiffPoolNorm.cpp, DiffActivation.cpp, DiffBinary.cpp
// and DiffMatmul.cpp make (DiffCases.h states the conventions of their
// bounds), a test of kernels running in place, and a check that some
// case exercises every kernel a backend claims.
#include "DiffCases.h"
#include "Differential.h"

#include "RefRun.h"

#include "runtime/KernelRegistry.h"
#include "runtime/plan/Plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <map>
#include <sstream>

namespace dtnn::test {
namespace {

using namespace diff;

std::vector<Case> allCases() {
  std::vector<Case> all;
  for (auto gen : {convCases, denseCases, poolCases, batchNormCases, batchNormFoldCases,
                   activationCases, softmaxCases,
                   binaryCases, concatCases, matmulCases, attentionCases, layerNormCases, mathCases,
                   lossCases, reduceCases, shapeCases, castCases, optimizerCases, encodingCases,
                   dropoutCases, collectiveCases}) {
    std::vector<Case> cs = gen();
    all.insert(all.end(), cs.begin(), cs.end());
  }
  return all;
}

void runFamily(const std::string &family, const std::vector<Case> &cases,
               Where where = Where::Host) {
  Report report(family);
  for (const Case &c : cases) checkCase(c, report, where);
  report.print();
  report.expectEveryClaimRan();
}

// The same cases on a device backend (the cuda one), which the test skips, saying why, on a
// machine without a GPU.
#define DEVICE_FAMILY(Name, cases)                                                                 \
  TEST(DifferentialDevice, Name) {                                                                 \
    if (std::string why = noDeviceReason(); !why.empty()) GTEST_SKIP() << why;                     \
    runFamily(#Name, cases(), Where::Device);                                                      \
  }

TEST(Differential, Conv) { runFamily("Conv", convCases()); }
TEST(Differential, Dense) { runFamily("Dense", denseCases()); }
TEST(Differential, Pool) { runFamily("Pool", poolCases()); }
TEST(Differential, BatchNorm) { runFamily("BatchNorm", batchNormCases()); }
TEST(Differential, BatchNormFold) { runFamily("BatchNormFold", batchNormFoldCases()); }
TEST(Differential, Activation) { runFamily("Activation", activationCases()); }
TEST(Differential, Softmax) { runFamily("Softmax", softmaxCases()); }
TEST(Differential, Binary) { runFamily("Binary", binaryCases()); }
TEST(Differential, Concat) { runFamily("Concat", concatCases()); }
TEST(Differential, Matmul) { runFamily("Matmul", matmulCases()); }
TEST(Differential, Attention) { runFamily("Attention", attentionCases()); }
TEST(Differential, LayerNorm) { runFamily("LayerNorm", layerNormCases()); }
TEST(Differential, Math) { runFamily("Math", mathCases()); }
TEST(Differential, Loss) { runFamily("Loss", lossCases()); }
TEST(Differential, Reduce) { runFamily("Reduce", reduceCases()); }
TEST(Differential, Shape) { runFamily("Shape", shapeCases()); }
TEST(Differential, Cast) { runFamily("Cast", castCases()); }

// The families whose ops have bf16 kernels of their own, in bf16 (inBf16: inputs rounded to bf16,
// float32 arithmetic, results rounded to bf16 on each side); a batch norm's scale, shift and
// statistics stay float32, as mixed precision keeps them.
std::vector<Case> bf16Cases() {
  std::vector<Case> out;
  for (auto gen : {convCases, denseCases, matmulCases, poolCases, batchNormCases, activationCases,
                   binaryCases, concatCases})
    for (const Case &c : gen()) out.push_back(inBf16(c));
  return out;
}

TEST(Differential, Bf16) { runFamily("Bf16", bf16Cases()); }
TEST(Differential, Optimizer) { runFamily("Optimizer", optimizerCases()); }
TEST(Differential, Encoding) { runFamily("Encoding", encodingCases()); }
TEST(Differential, Dropout) { runFamily("Dropout", dropoutCases()); }
TEST(Differential, Collective) { runFamily("Collective", collectiveCases()); }

DEVICE_FAMILY(Conv, convCases)
DEVICE_FAMILY(Dense, denseCases)
DEVICE_FAMILY(Pool, poolCases)
DEVICE_FAMILY(BatchNorm, batchNormCases)
DEVICE_FAMILY(BatchNormFold, batchNormFoldCases)
DEVICE_FAMILY(Activation, activationCases)
DEVICE_FAMILY(Softmax, softmaxCases)
DEVICE_FAMILY(Binary, binaryCases)
DEVICE_FAMILY(Concat, concatCases)
DEVICE_FAMILY(Matmul, matmulCases)
DEVICE_FAMILY(Attention, attentionCases)
DEVICE_FAMILY(LayerNorm, layerNormCases)
DEVICE_FAMILY(Math, mathCases)
DEVICE_FAMILY(Loss, lossCases)
DEVICE_FAMILY(Reduce, reduceCases)
DEVICE_FAMILY(Shape, shapeCases)
DEVICE_FAMILY(Optimizer, optimizerCases)
DEVICE_FAMILY(Encoding, encodingCases)
DEVICE_FAMILY(Dropout, dropoutCases)
DEVICE_FAMILY(Collective, collectiveCases)

// ---------------------------------------------------------------------------
// Kernels running in place. The op table lets an activation's result (and
// an activation gradient's) take its operand's storage when the op is the
// operand's last user; every backend's kernel must allow it. Graph:
//   %0 = conv2d %x, @w, @b        (in the backend's own layout)
//   %1 = relu %0                  (%0 is still read below: not in place)
//   %2 = relu_backward %dy, %0    (last reader of %0: may overwrite it)
//   %3 = sigmoid %1               (last reader of %1: may overwrite it)
// The plan must run at least one of them in place on the backend, and the
// results must match the reference. Bounds: the convolution's B = 2
// gamma(K) sum|x||w| (as in Differential.Conv); relu is exact and
// 1-Lipschitz, so %1 errs by B; relu_backward selects dy or 0 by the sign
// of %0, identical unless |%0| <= B, where |dy| is allowed; sigmoid is
// 1/4-Lipschitz: B/4 plus its own evaluation bound.
TEST(Differential, InPlace) {
  ConvGeom g{2, 3, 7, 7, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, true};
  Rng rng{0x1b1ace};
  auto x = rng.values(numel(g.x()), -1, 1), w = rng.values(numel(g.wt()), -1, 1);
  auto b = rng.values(g.k, -1, 1), dy = rng.values(numel(g.y()), -1, 1);
  std::vector<Operand> ops = {input("x", g.x(), x, true), input("dy", g.y(), dy),
                              param("w", g.wt(), w, true), param("b", {g.k}, b, true)};
  std::string y = typeText(g.y());
  Case c;
  c.op = "relu";
  c.label = "conv2d " + g.label() + " -> relu, relu_backward, sigmoid";
  c.operands = ops;
  c.body = {"%0 = conv2d %x, @w, @b " + g.attrs() + " : " + y, "%1 = relu %0 : " + y,
            "%2 = relu_backward %dy, %0 : " + y, "%3 = sigmoid %1 : " + y};
  c.results = {"%2", "%3"};
  c.resultDims = {g.y(), g.y()};

  // The convolution alone, for its exact values and magnitudes.
  Case conv = c;
  conv.body = {c.body[0]};
  conv.results = {"%0"};
  conv.resultDims = {g.y()};
  conv.operands.erase(conv.operands.begin() + 1); // dy
  auto z = runReference64(conv, false), mz = runReference64(conv, true);
  ASSERT_EQ(z.size(), 1u);
  ASSERT_EQ(mz.size(), 1u);
  double convTerms = static_cast<double>(g.c * g.kh * g.kw + 1);

  GraphRunner ref(c.irText("f32"), 0, "reference");
  ASSERT_TRUE(ref.ok()) << ref.error();
  int tested = 0;
  for (const std::string &backend : otherBackends()) {
    std::vector<std::string> missing;
    for (const char *op : {"conv2d", "relu", "relu_backward", "sigmoid"}) {
      Case one = c;
      one.op = op;
      if (Error why = checkClaim(backend, one)) missing.push_back(op);
    }
    if (!missing.empty()) {
      std::string m;
      for (const auto &s : missing) m += " " + s;
      std::cout << "[ skipped  ] " << backend << " in-place check: not claimed:" << m << "\n";
      continue;
    }
    ++tested;
    GraphRunner r(c.irText("f32"), 0, backend);
    ASSERT_TRUE(r.ok()) << r.error();
    // Which steps run in place on this backend.
    const runtime::Plan &plan = *r.plan();
    std::string inPlace;
    for (const runtime::PlanStep &s : plan.steps) {
      if (!s.op || s.backend != backend) continue;
      for (int o : s.out)
        for (int i : s.in)
          if (plan.root(o) == plan.root(i)) inPlace += " " + s.op->name();
    }
    std::cout << "[ diff     ] " << backend
              << " runs in place:" << (inPlace.empty() ? " nothing" : inPlace) << "\n";
    EXPECT_FALSE(inPlace.empty()) << "the plan on " << backend
                                  << " runs no kernel in place, so this test checks nothing:\n"
                                  << plan.str();
    std::vector<std::vector<double>> got, want;
    for (GraphRunner *gr : {&ref, &r}) {
      for (const Operand &o : c.operands) {
        if (o.isParam) {
          ASSERT_TRUE(gr->setParam(o.name, o.values));
        }
      }
      auto outs = gr->runValues({x, dy});
      ASSERT_EQ(outs.size(), 2u);
      (gr == &ref ? want : got) = outs;
    }
    Allowed allowed(2, std::vector<double>(dy.size()));
    for (size_t i = 0; i < dy.size(); ++i) {
      double bound = 2 * gamma(convTerms) * mz[0][i];
      allowed[0][i] = std::abs(z[0][i]) <= bound ? std::abs(dy[i]) : 0.0;
      double s = sigmoidOf(std::max(z[0][i], 0.0));
      allowed[1][i] = bound / 4 + (kRefExp + gamma(2) + kOtherLogistic) * s;
    }
    Comparison cmp = compareOutputs(c, backend, got, want, {}, allowed);
    std::cout << "[ diff     ] InPlace: " << backend << " worst |a-b|/allowed " << cmp.worstRatio
              << "\n";
    // Running again reads the parameters and inputs anew: results must not
    // depend on what the in-place kernels left behind.
    auto again = r.runValues({x, dy});
    ASSERT_EQ(again.size(), 2u);
    EXPECT_EQ(again, got) << backend << ": a second run gives other results";
  }
  if (!tested) std::cout << "[ skipped  ] no backend other than the reference claims every op\n";
}

// ---------------------------------------------------------------------------
// Coverage: lists, per non-reference backend, the ops its kernels claim, and
// fails for a kernel that no case of the families exercised (the registry
// entry that KernelRegistry::find returns for some case), so that a new
// kernel must come with cases.
TEST(Differential, Coverage) {
  std::vector<Case> cases = allCases();
  const runtime::KernelRegistry &reg = runtime::KernelRegistry::get();
  std::vector<std::string> backends = otherBackends(Where::Host);
  for (const std::string &b : otherBackends(Where::Device)) backends.push_back(b);
  for (const std::string &backend : backends) {
    // In the registry's order (op, backend, dtype), never by pointer.
    std::vector<std::pair<const runtime::KernelEntry *, int>> exercised;
    std::ostringstream listing;
    for (const runtime::KernelEntry *e : reg.all())
      if (e->backend == backend) exercised.push_back({e, 0});
    for (const Case &c : cases) {
      if (Error why = checkClaim(backend, c)) continue;
      // The entry find() returns for this case, and the backend's entries of the op at other
      // element types (one kernel that moves any type's bytes).
      for (auto &[e, n] : exercised)
        if (e->op == c.op) ++n;
    }
    std::vector<std::string> missing;
    listing << "[ claims   ] " << backend << ":";
    for (const auto &[e, n] : exercised) {
      std::string name =
          e->op +
          (e->dtype == ir::DType::F32 ? "" : "(" + std::string(ir::dtypeName(e->dtype)) + ")");
      listing << " " << name << "[" << n << "]";
      if (!n) missing.push_back(name);
    }
    std::cout << listing.str() << "\n";
    std::string m;
    for (const auto &s : missing) m += " " + s;
    EXPECT_TRUE(missing.empty()) << backend
                                 << " has kernels that no differential case exercises:" << m
                                 << "; add cases for them to a family file, test/unit/Diff*.cpp";
  }
}

} // namespace
} // namespace dtnn::test
