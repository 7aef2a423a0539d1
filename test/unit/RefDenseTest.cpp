// Forward and backward kernels of dense on the reference backend, against
// values computed by hand.
#include "backends/reference/ReferenceBackend.h"
#include "ir/TextParser.h"
#include "runtime/Executor.h"

#include <gtest/gtest.h>

#include <omp.h>

#include <map>
#include <optional>
#include <sstream>

namespace dtnn::test {
namespace {

// Graph @f of IR text, planned at batch 1 on the reference backend. Inputs,
// outputs and parameters travel as vectors of double, converted to and from
// each tensor's element type.
class Runner {
public:
  explicit Runner(const std::string &text, int threads = 0) : diags_(sm_, errs_) {
    module_ = ir::parseModule(text, "test.dtir", sm_, diags_);
    if (!module_) return;
    backend_ = reference::createReferenceBackend({threads});
    auto plan = runtime::buildPlan(*module_->findGraph("f"), 1, *backend_);
    if (!plan) {
      errs_ << plan.error().message();
      return;
    }
    plan_.emplace(std::move(*plan));
    store_ = std::make_unique<runtime::ParamStore>(*module_, *backend_);
    exec_ = std::make_unique<runtime::Executor>(*plan_, *store_, *backend_);
  }

  bool ok() const { return exec_ != nullptr; }
  std::string error() const { return errs_.str(); }

  void setParam(const std::string &name, const std::vector<double> &values) {
    runtime::Tensor t = store_->read(name);
    fromDoubles(t, values);
    store_->write(name, t);
  }
  std::vector<double> param(const std::string &name) const { return toDoubles(store_->read(name)); }

  // Runs the graph once and returns every output.
  std::vector<std::vector<double>> run(const std::vector<std::vector<double>> &inputs) {
    for (size_t i = 0; i < inputs.size(); ++i) {
      runtime::Tensor t(plan_->values[plan_->inputs[i]].type);
      fromDoubles(t, inputs[i]);
      exec_->setInput(i, t.raw(), t.bytes());
    }
    exec_->run();
    std::vector<std::vector<double>> outs;
    for (size_t i = 0; i < plan_->outputs.size(); ++i) outs.push_back(toDoubles(exec_->output(i)));
    return outs;
  }

private:
  static void fromDoubles(runtime::Tensor &t, const std::vector<double> &v) {
    ASSERT_EQ(int64_t(v.size()), t.numel()) << t.type().str();
    for (int64_t i = 0; i < t.numel(); ++i) switch (t.type().dtype) {
      case ir::DType::F32: t.data<float>()[i] = float(v[i]); break;
      case ir::DType::F64: t.data<double>()[i] = v[i]; break;
      case ir::DType::I64: t.data<int64_t>()[i] = int64_t(v[i]); break;
      default: FAIL() << "unsupported type " << t.type().str();
      }
  }
  static std::vector<double> toDoubles(const runtime::Tensor &t) {
    std::vector<double> v(t.numel());
    for (int64_t i = 0; i < t.numel(); ++i)
      v[i] = t.type().dtype == ir::DType::F32 ? t.data<float>()[i] : t.data<double>()[i];
    return v;
  }

  SourceManager sm_;
  std::ostringstream errs_;
  DiagnosticEngine diags_;
  std::unique_ptr<ir::Module> module_;
  std::unique_ptr<runtime::Backend> backend_;
  std::optional<runtime::Plan> plan_;
  std::unique_ptr<runtime::ParamStore> store_;
  std::unique_ptr<runtime::Executor> exec_;
};

// Runs graph @f once with f64 parameters set from `params`.
std::vector<std::vector<double>> runF64(const std::string &text,
                                        const std::vector<std::vector<double>> &inputs,
                                        const std::map<std::string, std::vector<double>> &params) {
  Runner r(text);
  EXPECT_TRUE(r.ok()) << r.error();
  if (!r.ok()) return {};
  for (const auto &[name, values] : params) r.setParam(name, values);
  return r.run(inputs);
}

// x [2,3], w [2,3], b [2]: y[n][m] = sum_k x[n][k] * w[m][k] + b[m].
TEST(RefDense, ForwardWithBias) {
  auto outs = runF64("param @w : f64[2,3] init=zeros\n"
                     "param @b : f64[2] init=zeros\n"
                     "graph @f(%x: f64[2,3]) -> f64[2,2] {\n"
                     "  %0 = dense %x, @w, @b : f64[2,2]\n"
                     "  return %0\n"
                     "}\n",
                     {{1, 2, 3, -1, 0, 2}}, {{"w", {1, 0, -1, 2, 1, 0.5}}, {"b", {0.5, -1}}});
  ASSERT_EQ(outs.size(), 1u);
  // Row 0: (1 - 3) + 0.5 = -1.5, (2 + 2 + 1.5) - 1 = 4.5.
  // Row 1: (-1 - 2) + 0.5 = -2.5, (-2 + 0 + 1) - 1 = -2.
  EXPECT_EQ(outs[0], (std::vector<double>{-1.5, 4.5, -2.5, -2}));
}

TEST(RefDense, ForwardWithoutBias) {
  auto outs = runF64("param @w : f64[1,4] init=zeros\n"
                     "graph @f(%x: f64[3,4]) -> f64[3,1] {\n"
                     "  %0 = dense %x, @w : f64[3,1]\n"
                     "  return %0\n"
                     "}\n",
                     {{1, 1, 1, 1, 1, 2, 3, 4, 0, 0, 0, -2}}, {{"w", {1, -1, 2, 0.25}}});
  ASSERT_EQ(outs.size(), 1u);
  EXPECT_EQ(outs[0], (std::vector<double>{2.25, 6, -0.5}));
}

// dy [2,2], w [2,3], x [2,3]: dx = dy w, dw = dy^T x, db = column sums of dy.
TEST(RefDense, BackwardOps) {
  auto outs = runF64("param @w : f64[2,3] init=zeros\n"
                     "graph @f(%dy: f64[2,2], %x: f64[2,3]) -> (f64[2,3], f64[2,3], f64[2]) {\n"
                     "  %0 = dense_backward_data %dy, @w : f64[2,3]\n"
                     "  %1 = dense_backward_weights %dy, %x : f64[2,3]\n"
                     "  %2 = dense_backward_bias %dy : f64[2]\n"
                     "  return %0, %1, %2\n"
                     "}\n",
                     {{1, 2, -1, 0.5}, {1, 2, 3, -1, 0, 2}}, {{"w", {1, 0, -1, 2, 1, 0.5}}});
  ASSERT_EQ(outs.size(), 3u);
  EXPECT_EQ(outs[0], (std::vector<double>{5, 2, 0, 0, 0.5, 1.25}));
  EXPECT_EQ(outs[1], (std::vector<double>{2, 2, 1, 1.5, 4, 7}));
  EXPECT_EQ(outs[2], (std::vector<double>{0, 2.5}));
}

// Test data in [-1, 1).
std::vector<double> pattern(int count, int mul, int mod) {
  std::vector<double> v(count);
  for (int i = 0; i < count; ++i) v[i] = double(i * mul % mod) / (mod / 2.0) - 1;
  return v;
}

// A wide float layer: compare with a plain double loop.
TEST(RefDense, ForwardFloatMatchesNaiveLoop) {
  const int n = 7, k = 300, m = 33;
  Runner r("param @w : f32[33,300] init=zeros\n"
           "param @b : f32[33] init=zeros\n"
           "graph @f(%x: f32[7,300]) -> f32[7,33] {\n"
           "  %0 = dense %x, @w, @b : f32[7,33]\n"
           "  return %0\n"
           "}\n");
  ASSERT_TRUE(r.ok()) << r.error();
  std::vector<double> x = pattern(n * k, 37, 101), w = pattern(m * k, 53, 97),
                      b = pattern(m, 7, 11);
  r.setParam("w", w);
  r.setParam("b", b);
  auto y = r.run({x})[0];
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < m; ++j) {
      double ref = float(b[j]);
      for (int q = 0; q < k; ++q) ref += double(float(x[i * k + q])) * float(w[j * k + q]);
      EXPECT_NEAR(y[i * m + j], ref, 1e-4) << i << "," << j;
    }
}

// Forward and backward results are identical for 1 and 3 threads.
TEST(RefDense, IndependentOfThreadCount) {
  std::string text = "param @w : f32[40,64] init=zeros\n"
                     "param @b : f32[40] init=zeros\n"
                     "graph @f(%x: f32[50,64], %dy: f32[50,40]) -> "
                     "(f32[50,40], f32[50,64], f32[40,64], f32[40]) {\n"
                     "  %0 = dense %x, @w, @b : f32[50,40]\n"
                     "  %1 = dense_backward_data %dy, @w : f32[50,64]\n"
                     "  %2 = dense_backward_weights %dy, %x : f32[40,64]\n"
                     "  %3 = dense_backward_bias %dy : f32[40]\n"
                     "  return %0, %1, %2, %3\n"
                     "}\n";
  int saved = omp_get_max_threads();
  std::vector<std::vector<std::vector<double>>> results;
  for (int threads : {1, 3}) {
    Runner r(text, threads);
    ASSERT_TRUE(r.ok()) << r.error();
    r.setParam("w", pattern(40 * 64, 31, 89));
    r.setParam("b", pattern(40, 3, 7));
    results.push_back(r.run({pattern(50 * 64, 17, 83), pattern(50 * 40, 13, 79)}));
  }
  omp_set_num_threads(saved);
  EXPECT_EQ(results[0], results[1]);
}

} // namespace
} // namespace dtnn::test
