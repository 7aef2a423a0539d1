// dropout_train on the reference backend: the fraction kept, the mask values,
// and a mask that is a pure function of (seed, step, index): repeatable,
// different across steps and seeds, and independent of the thread count.
#include "backends/reference/ReferenceBackend.h"
#include "ir/TextParser.h"
#include "runtime/Executor.h"

#include <gtest/gtest.h>

#include <omp.h>

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
  Runner r(dropoutGraph("f32", kLarge, "rate=0.3, seed=11"));
  ASSERT_TRUE(r.ok()) << r.error();
  std::vector<double> x = ramp(kLarge);
  auto outs = r.run({x, {5}});
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
  Runner r(dropoutGraph("f64", 1000, "rate=0.0"));
  ASSERT_TRUE(r.ok()) << r.error();
  std::vector<double> x = ramp(1000);
  auto outs = r.run({x, {0}});
  EXPECT_EQ(outs[1], std::vector<double>(1000, 1.0));
  EXPECT_EQ(outs[0], x);
}

// Same (seed, step): same mask; another step or seed: another mask, drawn
// independently (the overlap of two kept sets is about (1 - rate)^2).
TEST(RefDropout, MaskIsAFunctionOfSeedAndStep) {
  const int n = 100000;
  Runner a(dropoutGraph("f64", n, "rate=0.5, seed=1"));
  Runner b(dropoutGraph("f64", n, "rate=0.5, seed=2"));
  ASSERT_TRUE(a.ok()) << a.error();
  ASSERT_TRUE(b.ok()) << b.error();
  std::vector<double> x = ramp(n);
  auto step3 = a.run({x, {3}})[1];
  auto step4 = a.run({x, {4}})[1];
  auto step3Again = a.run({x, {3}})[1];
  auto seed2 = b.run({x, {3}})[1];
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
    Runner r(dropoutGraph("f64", kLarge, "rate=0.25, seed=9"), threads);
    ASSERT_TRUE(r.ok()) << r.error();
    masks.push_back(r.run({x, {17}})[1]);
  }
  omp_set_num_threads(saved);
  EXPECT_EQ(masks[0], masks[1]);
  Runner f(dropoutGraph("f32", kLarge, "rate=0.25, seed=9"));
  ASSERT_TRUE(f.ok()) << f.error();
  auto fmask = f.run({x, {17}})[1];
  for (int i = 0; i < kLarge; ++i) ASSERT_EQ(fmask[i] != 0, masks[0][i] != 0) << i;
}

// At inference dropout passes its input through.
TEST(RefDropout, InferenceIsIdentity) {
  Runner r("graph @f(%x: f32[5]) -> f32[5] {\n"
           "  %0 = dropout %x {rate=0.5} : f32[5]\n"
           "  return %0\n"
           "}\n");
  ASSERT_TRUE(r.ok()) << r.error();
  std::vector<double> x = {1, -2, 0.5, 3, 0};
  EXPECT_EQ(r.run({x})[0], x);
}

// The mask of a fixed (seed, step) never changes, so a training run resumed
// from a checkpoint draws the masks it would have drawn.
TEST(RefDropout, PinnedMask) {
  Runner r(dropoutGraph("f64", 32, "rate=0.5, seed=0"));
  ASSERT_TRUE(r.ok()) << r.error();
  auto mask = r.run({ramp(32), {0}})[1];
  std::string bits;
  for (double m : mask) bits += m != 0 ? '1' : '0';
  EXPECT_EQ(bits, "00000100000110000001101110110001");
}

} // namespace
} // namespace dtnn::test
