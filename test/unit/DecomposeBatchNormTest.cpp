// decompose-batchnorm against the batch norm it takes apart: a training batch
// norm followed by relu6, run whole on the reference backend (statistics in
// double), and decomposed and fused by the train pipeline's last two passes,
// its fused ops on the jit. The activation, the batch mean and invstd that
// the backward reads, the gradients of x, gamma and beta (through relu6's),
// and the running statistics after two steps agree within
// the rounding of float sums, at f32 and f64, with a channel count and a plane
// that are not multiples of a vector width.
#include "FusedGraphs.h"
#include "RefRun.h"

#include "ir/Printer.h"
#include "ir/TextParser.h"
#include "passes/PassManager.h"
#include "runtime/plan/Plan.h"
#include "runtime/train/FusionTargets.h"

#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

namespace dtnn::test {

namespace {

// A batch norm over x [4,5,3,7] of element type `t`, then relu6, and its
// backward from the gradient dy of relu6's result; returns relu6's result,
// the batch mean and invstd, and the gradients of x, gamma and beta.
std::string batchNormModule(const std::string &t) {
  std::string pc = t + "[5]", x = t + "[4,5,3,7]";
  return "param @g : " + pc + " init=ones\nparam @b : " + pc + " init=zeros\n" +
         "buffer @rm : " + pc + " init=zeros\nbuffer @rv : " + pc + " init=ones\n" +
         "graph @f(%x: " + x + ", %dy: " + x + ") -> (" + x + ", " + pc + ", " + pc + ", " + x +
         ", " + pc + ", " + pc + ") {\n" +
         "  %0, %1, %2, %3, %4 = batchnorm_train %x, @g, @b, @rm, @rv "
         "{eps=0.001, momentum=0.3} : " + x + ", " + pc + ", " + pc + ", " + pc + ", " + pc + "\n" +
         "  %5 = relu6 %0 : " + x + "\n" + "  %6 = relu6_backward %dy, %0 : " + x + "\n" +
         "  %7, %8, %9 = batchnorm_backward %6, %x, @g, %1, %2 : " + x + ", " + pc + ", " + pc +
         "\n  return %5, %1, %2, %7, %8, %9\n}\n";
}

// `text` after decompose-batchnorm and fuse-elementwise for the default
// backend's run (oneDNN, the jit running fused ops).
std::string decomposed(const std::string &text) {
  SourceManager sm;
  std::ostringstream err;
  DiagnosticEngine diags(sm, err);
  auto m = ir::parseModule(text, "bn.dtir", sm, diags);
  EXPECT_TRUE(m) << err.str();
  auto target = runtime::makeFusionTarget("onednn");
  EXPECT_TRUE(bool(target));
  if (!m || !target) return "";
  passes::PassManagerOptions o;
  o.target = target->get();
  passes::PassManager pm(o);
  EXPECT_FALSE(pm.parsePipeline("decompose-batchnorm,fuse-elementwise"));
  EXPECT_FALSE(pm.run(*m));
  std::ostringstream out;
  ir::printModule(*m, out);
  return out.str();
}

void setParams(GraphRunner &r) {
  r.setParam("g", {1.5, 0.5, -1, 2, 0.25});
  r.setParam("b", {0.5, -1, 0, 3, 1});
  r.setParam("rm", {0, 1, -1, 0.5, 2});
  r.setParam("rv", {1, 2, 0.5, 1, 3});
}

void expectAgree(const std::vector<double> &got, const std::vector<double> &want, double tol,
                 const std::string &what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], tol * (1 + std::fabs(want[i]))) << what << " element " << i;
}

void checkDecomposition(const std::string &t, double tol) {
  SCOPED_TRACE(t);
  std::string whole = batchNormModule(t);
  std::string parts = decomposed(whole);
  ASSERT_EQ(parts.find("batchnorm_train"), std::string::npos) << parts;
  ASSERT_NE(parts.find("moving_average"), std::string::npos) << parts;
  GraphRunner ref(whole, 1, "reference"), jit(parts, 2, "onednn");
  ASSERT_TRUE(ref.ok()) << ref.error();
  ASSERT_TRUE(jit.ok()) << jit.error() << "\n" << parts;
  ASSERT_EQ(parts.find("batchnorm_backward"), std::string::npos) << parts;
  ASSERT_EQ(parts.find("relu6_backward %dy"), std::string::npos)
      << "the backward's kernels recompute relu6's gradient\n" << parts;
  int onJit = 0;
  for (const runtime::PlanStep &s : jit.plan()->steps)
    if (s.op && s.op->name() == "fused") onJit += s.backend == "jit";
  EXPECT_GE(onJit, 5) << "the reductions, the normalization and the backward's two kernels run "
                         "on the jit\n" << parts;
  setParams(ref);
  setParams(jit);
  // Values well away from zero mean: the variance is taken about the mean.
  std::vector<double> x = fusedTestValues(4 * 5 * 3 * 7, 11);
  for (double &v : x) v = 10 + 3 * v;
  runtime::Tensor in = makeTensor({*ir::parseDType(t), {4, 5, 3, 7}}, x);
  runtime::Tensor dy = makeTensor(in.type(), fusedTestValues(4 * 5 * 3 * 7, 12));
  for (int step = 0; step < 2; ++step) {
    std::vector<runtime::Tensor> want = ref.run({in, dy}), got = jit.run({in, dy});
    ASSERT_EQ(want.size(), 6u);
    ASSERT_EQ(got.size(), 6u);
    const char *names[] = {"relu6(y)", "mean", "invstd", "dx", "dgamma", "dbeta"};
    for (size_t i = 0; i < 6; ++i)
      expectAgree(toDoubles(got[i]), toDoubles(want[i]), tol, names[i]);
    expectAgree(toDoubles(jit.param("rm")), toDoubles(ref.param("rm")), tol, "running mean");
    expectAgree(toDoubles(jit.param("rv")), toDoubles(ref.param("rv")), tol, "running variance");
  }
}

} // namespace

TEST(DecomposeBatchNorm, AgreesWithTheWholeBatchNorm) {
  checkDecomposition("f32", 2e-5);
  checkDecomposition("f64", 1e-12);
}

} // namespace dtnn::test
