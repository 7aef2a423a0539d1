// Loss and metric kernels on the reference backend against values computed
// by hand, and the shape rules' error messages.
#include "RefRun.h"

#include "ir/IR.h"
#include "ir/OpTable.h"

#include <gtest/gtest.h>

#include <cmath>

namespace dtnn::test {
namespace {

using ir::DType;
using ir::TensorType;

TensorType f64(std::vector<int64_t> dims) { return TensorType(DType::F64, std::move(dims)); }
TensorType f32(std::vector<int64_t> dims) { return TensorType(DType::F32, std::move(dims)); }
TensorType i32(std::vector<int64_t> dims) { return TensorType(DType::I32, std::move(dims)); }

// The IR of graph @f applying `op` to two operands of the given types.
std::string lossIr(const std::string &op, const std::string &x, const std::string &y,
                   const std::string &result, const std::string &attrs = "") {
  return "graph @f(%x: " + x + ", %y: " + y + ") -> " + result + " {\n  %0 = " + op + " %x, %y" +
         attrs + " : " + result + "\n  return %0\n}\n";
}

// The IR of graph @f applying backward op `op` to (dy, x, y).
std::string backwardIr(const std::string &op, const std::string &dy, const std::string &x,
                       const std::string &y, const std::string &attrs = "") {
  return "graph @f(%dy: " + dy + ", %x: " + x + ", %y: " + y + ") -> " + x + " {\n  %0 = " + op +
         " %dy, %x, %y" + attrs + " : " + x + "\n  return %0\n}\n";
}

// A vector of tensors, which are move-only.
std::vector<runtime::Tensor> tensors(runtime::Tensor a, runtime::Tensor b) {
  std::vector<runtime::Tensor> v;
  v.push_back(std::move(a));
  v.push_back(std::move(b));
  return v;
}

// Runs a two-operand op and returns its scalar result.
double runLoss(const std::string &op, TensorType xt, std::vector<double> x, TensorType yt,
               std::vector<double> y, const std::string &attrs = "") {
  std::string result = TensorType(xt.dtype, {}).str();
  auto out = runGraph(lossIr(op, xt.str(), yt.str(), result, attrs),
                      tensors(makeTensor(xt, std::move(x)), makeTensor(yt, std::move(y))));
  if (out.size() != 1) return std::nan("");
  return toDoubles(out[0]).at(0);
}

// Runs a backward op with scalar gradient dy and returns its result.
std::vector<double> runBackward(const std::string &op, double dy, TensorType xt,
                                std::vector<double> x, TensorType yt, std::vector<double> y,
                                const std::string &attrs = "") {
  TensorType dyt(xt.dtype, {});
  std::vector<runtime::Tensor> in = tensors(makeTensor(dyt, {dy}), makeTensor(xt, std::move(x)));
  in.push_back(makeTensor(yt, std::move(y)));
  auto out = runGraph(backwardIr(op, dyt.str(), xt.str(), yt.str(), attrs), in);
  if (out.size() != 1) return {};
  return toDoubles(out[0]);
}

// The shape rule's message for `op` on these operand types, or "" if it accepts them.
std::string shapeError(const std::string &op, std::vector<TensorType> operands,
                       ir::AttrMap attrs = {}) {
  const ir::OpDef *def = ir::OpTable::get().lookup(op);
  if (!def) return "no op " + op;
  ir::fillDefaultAttrs(*def, attrs);
  ir::InferCtx ctx{operands, attrs, {}, {}};
  return ir::inferResultTypes(*def, ctx).message();
}

TEST(RefLoss, SoftmaxCrossEntropyIsStableForHugeLogits) {
  // Row 0: log(1 + e^-1000 + e^-2000) = 0; row 1: log 3; row 2, label 0:
  // 1001 + log(1 + e^-1 + e^-2) - 1000.
  std::vector<double> logits = {1000, 0, -1000, 0, 0, 0, 1000, 1001, 999};
  double expected = (0 + std::log(3.0) + 1 + std::log(1 + std::exp(-1.0) + std::exp(-2.0))) / 3;
  EXPECT_NEAR(runLoss("softmax_cross_entropy", f64({3, 3}), logits, i32({3}), {0, 2, 0}), expected,
              1e-14);
  EXPECT_NEAR(runLoss("softmax_cross_entropy", f32({3, 3}), logits, i32({3}), {0, 2, 0}), expected,
              1e-6);
  // The label's logit far below the others: the loss is the gap, not inf.
  EXPECT_NEAR(runLoss("softmax_cross_entropy", f32({1, 2}), {-1000, 1000}, i32({1}), {0}), 2000,
              1e-3);
}

TEST(RefLoss, SoftmaxCrossEntropyBackward) {
  // dy = 2 over N = 2 samples: (softmax - onehot) * 2 / 2.
  // Row 1 has huge logits [1000, 1001, 1001]: softmax [1, e, e] / (1 + 2e).
  double e1 = std::exp(1.0), e2 = std::exp(2.0), e3 = std::exp(3.0), s = e1 + e2 + e3;
  double third = 1 / (1 + 2 * e1);
  auto dx = runBackward("softmax_cross_entropy_backward", 2, f64({2, 3}),
                        {1, 2, 3, 1000, 1001, 1001}, i32({2}), {2, 1});
  std::vector<double> expected = {e1 / s, e2 / s, e3 / s - 1, third, e1 * third - 1, e1 * third};
  ASSERT_EQ(dx.size(), expected.size());
  for (size_t i = 0; i < dx.size(); ++i) EXPECT_NEAR(dx[i], expected[i], 1e-14) << i;
}

TEST(RefLoss, InvalidLabelsGiveNaN) {
  EXPECT_TRUE(
      std::isnan(runLoss("softmax_cross_entropy", f64({2, 2}), {1, 2, 3, 4}, i32({2}), {0, 2})));
  EXPECT_TRUE(std::isnan(runLoss("nll_loss", f64({2, 2}), {1, 2, 3, 4}, i32({2}), {-1, 0})));
  auto dx =
      runBackward("softmax_cross_entropy_backward", 1, f64({2, 2}), {1, 2, 3, 4}, i32({2}), {0, 5});
  ASSERT_EQ(dx.size(), 4u);
  EXPECT_FALSE(std::isnan(dx[0]));
  EXPECT_TRUE(std::isnan(dx[2]) && std::isnan(dx[3]));
}

TEST(RefLoss, IgnoreIndexLeavesRowsOut) {
  // Rows of label -100 (the default ignore_index) count neither in the sum nor in the mean.
  std::vector<double> logits = {1, 2, 3, 0, 0, 0, 3, 1, 2};
  double row0 = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0)) - 3;
  double row2 = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0)) - 3;
  EXPECT_NEAR(runLoss("softmax_cross_entropy", f64({3, 3}), logits, i32({3}), {2, -100, 0}),
              (row0 + row2) / 2, 1e-14);
  // An ignore_index inside [0, C) leaves its class's rows out.
  EXPECT_NEAR(runLoss("softmax_cross_entropy", f64({3, 3}), logits, i32({3}), {2, 1, 1},
                      " {ignore_index=1}"),
              row0, 1e-14);
  // A batch of nothing but padding has loss 0, not nan.
  EXPECT_EQ(runLoss("softmax_cross_entropy", f64({2, 3}), {1, 2, 3, 4, 5, 6}, i32({2}),
                    {-100, -100}),
            0);
  // The gradient: zero in the ignored row, the others over the 2 rows counted.
  auto dx = runBackward("softmax_cross_entropy_backward", 1, f64({3, 3}), logits, i32({3}),
                        {2, -100, 0});
  ASSERT_EQ(dx.size(), 9u);
  double s = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  EXPECT_NEAR(dx[2], (std::exp(3.0) / s - 1) / 2, 1e-14);
  EXPECT_EQ(dx[3], 0);
  EXPECT_EQ(dx[4], 0);
  EXPECT_EQ(dx[5], 0);
  EXPECT_NEAR(dx[6], (std::exp(3.0) / s - 1) / 2, 1e-14);
  // nll_loss and its gradient, and accuracy, the same way.
  std::vector<double> logp = {-0.5, -1.5, -0.1, -3.0};
  EXPECT_DOUBLE_EQ(runLoss("nll_loss", f64({2, 2}), logp, i32({2}), {-100, 0}), 0.1);
  auto dn = runBackward("nll_loss_backward", 1, f64({2, 2}), logp, i32({2}), {0, 1},
                        " {ignore_index=0}");
  EXPECT_EQ(dn, (std::vector<double>{0, 0, 0, -1}));
  // Row 0 right, row 1 wrong, row 2 ignored: 1 of 2.
  EXPECT_DOUBLE_EQ(runLoss("accuracy", f64({3, 2}), {1, 0, 1, 0, 0, 1}, i32({3}), {0, 1, -100}),
                   0.5);
  EXPECT_DOUBLE_EQ(
      runLoss("accuracy", f64({3, 2}), {1, 0, 1, 0, 0, 1}, i32({3}), {0, 1, 1}, " {ignore_index=1}"),
      1.0);
}

TEST(RefLoss, NllLoss) {
  // -(logp[0,1] + logp[1,0] + logp[2,2]) / 3.
  std::vector<double> logp = {-0.5, -1.5, -2.0, -0.1, -3.0, -4.0, -2.5, -0.7, -0.2};
  EXPECT_NEAR(runLoss("nll_loss", f64({3, 3}), logp, i32({3}), {1, 0, 2}), (1.5 + 0.1 + 0.2) / 3,
              1e-15);
  auto dx = runBackward("nll_loss_backward", 3, f64({3, 3}), logp, i32({3}), {1, 0, 2});
  std::vector<double> expected = {0, -1, 0, -1, 0, 0, 0, 0, -1};
  ASSERT_EQ(dx.size(), expected.size());
  for (size_t i = 0; i < dx.size(); ++i) EXPECT_DOUBLE_EQ(dx[i], expected[i]) << i;
}

TEST(RefLoss, MseLoss) {
  // Squared differences 1, 0, 4, 0 over 4 elements.
  EXPECT_DOUBLE_EQ(runLoss("mse_loss", f64({2, 2}), {1, 2, 3, 4}, f64({2, 2}), {0, 2, 5, 4}), 1.25);
  EXPECT_FLOAT_EQ(runLoss("mse_loss", f32({4}), {1, 2, 3, 4}, f32({4}), {0, 2, 5, 4}), 1.25f);
  // 2 * (p - t) * dy / 4 with dy = 2.
  auto dx =
      runBackward("mse_loss_backward", 2, f64({2, 2}), {1, 2, 3, 4}, f64({2, 2}), {0, 2, 5, 4});
  EXPECT_EQ(dx, (std::vector<double>{1, 0, -2, 0}));
}

TEST(RefLoss, MseLossSumsLargeTensorsDeterministically) {
  // More elements than one partial sum holds: 10000 differences of 0.5.
  std::vector<double> p(10000, 1.0), t(10000, 0.5);
  EXPECT_DOUBLE_EQ(runLoss("mse_loss", f64({100, 100}), p, f64({100, 100}), t), 0.25);
}

TEST(RefLoss, BceLossClampsLogs) {
  // p=0.5,t=1: log 2; p=0.9,t=0: -log 0.1; p=0,t=1: log clamped to -100;
  // p=1,t=1: log(1-p) = -inf is clamped and multiplied by 0.
  double expected = (std::log(2.0) - std::log(0.1) + 100 + 0) / 4;
  EXPECT_NEAR(runLoss("bce_loss", f64({4}), {0.5, 0.9, 0, 1}, f64({4}), {1, 0, 1, 1}), expected,
              1e-14);
  EXPECT_NEAR(runLoss("bce_loss", f32({4}), {0.5, 0.9, 0, 1}, f32({4}), {1, 0, 1, 1}), expected,
              1e-5);
  // Soft targets: -(0.3 log 0.2 + 0.7 log 0.8).
  EXPECT_NEAR(runLoss("bce_loss", f64({1}), {0.2}, f64({1}), {0.3}),
              -(0.3 * std::log(0.2) + 0.7 * std::log(0.8)), 1e-15);
}

TEST(RefLoss, BceLossBackward) {
  // dy * (p - t) / max(p (1 - p), 1e-12) / numel with dy = 3, numel = 3.
  auto dx = runBackward("bce_loss_backward", 3, f64({3}), {0.5, 0.2, 0}, f64({3}), {1, 0.3, 1});
  ASSERT_EQ(dx.size(), 3u);
  EXPECT_NEAR(dx[0], -0.5 / 0.25, 1e-14);
  EXPECT_NEAR(dx[1], -0.1 / 0.16, 1e-14);
  EXPECT_NEAR(dx[2], -1 / 1e-12, 1e-2);
}

TEST(RefLoss, AccuracyTopKWithTies) {
  // Sample 0: label 1 is the maximum. Sample 1: label 1 ties with class 0
  // for the maximum; the tie goes to the lower class (argmax's first
  // maximum), so it is second. Sample 2: three classes above label 1.
  // Sample 3: two classes above label 0.
  std::vector<double> logits = {0.1, 0.9, 0.5, 0.3, 0.7, 0.7, 0.2, 0.1,
                                0.2, 0.1, 0.9, 0.8, 0.5, 0.4, 0.6, 0.7};
  std::vector<double> labels = {1, 1, 1, 0};
  EXPECT_DOUBLE_EQ(runLoss("accuracy", f64({4, 4}), logits, i32({4}), labels), 0.25);
  EXPECT_DOUBLE_EQ(runLoss("accuracy", f64({4, 4}), logits, i32({4}), labels, " {k=2}"), 0.5);
  EXPECT_DOUBLE_EQ(runLoss("accuracy", f64({4, 4}), logits, i32({4}), labels, " {k=3}"), 0.75);
  EXPECT_DOUBLE_EQ(runLoss("accuracy", f32({4, 4}), logits, i32({4}), labels, " {k=4}"), 1.0);
  // Regression: all scores equal counted every sample as right (constant
  // logits at chance loss reported 100%); now only label 0 is, as argmax.
  EXPECT_DOUBLE_EQ(runLoss("accuracy", f64({2, 3}), {0, 0, 0, 0, 0, 0}, i32({2}), {0, 2}), 0.5);
  EXPECT_DOUBLE_EQ(runLoss("accuracy", f64({3, 3}), std::vector<double>(9, 0.25), i32({3}),
                           {1, 2, 1}),
                   0.0);
}

TEST(RefLoss, AccuracyMissesInvalidLabelsAndNaN) {
  EXPECT_DOUBLE_EQ(
      runLoss("accuracy", f64({3, 2}), {1, 0, 1, 0, std::nan(""), 0}, i32({3}), {0, 7, 0}),
      1.0 / 3);
  // A NaN score of another class ranks before the label, as argmax picks it.
  EXPECT_DOUBLE_EQ(runLoss("accuracy", f64({1, 2}), {1, std::nan("")}, i32({1}), {0}), 0.0);
}

TEST(RefLoss, ShapeRules) {
  const int64_t Q = ir::kDynamic;
  EXPECT_EQ(shapeError("softmax_cross_entropy", {f32({Q, 10}), i32({Q})}), "");
  EXPECT_EQ(shapeError("softmax_cross_entropy", {f32({Q, 10}), i32({8})}), "");
  EXPECT_EQ(shapeError("softmax_cross_entropy", {f32({Q, 10, 1}), i32({Q})}),
            "softmax_cross_entropy expects 2-d logits [N,C], got f32[?,10,1]");
  EXPECT_EQ(shapeError("softmax_cross_entropy", {i32({4, 10}), i32({4})}),
            "softmax_cross_entropy expects floating-point logits, got i32[4,10]");
  EXPECT_EQ(shapeError("softmax_cross_entropy", {f32({4, 10}), TensorType(DType::I64, {4})}),
            "softmax_cross_entropy expects i32 labels [N], got i64[4]");
  EXPECT_EQ(shapeError("nll_loss", {f32({4, 10}), i32({4, 1})}),
            "nll_loss expects i32 labels [N], got i32[4,1]");
  EXPECT_EQ(shapeError("nll_loss", {f32({4, 10}), i32({3})}),
            "nll_loss labels i32[3] do not match the batch of log-probabilities f32[4,10]");
  EXPECT_EQ(shapeError("mse_loss", {f32({Q, 3}), f32({Q, 3})}), "");
  EXPECT_EQ(shapeError("mse_loss", {f32({4, 3}), f32({4, 2})}),
            "mse_loss target f32[4,2] does not match prediction f32[4,3]");
  EXPECT_EQ(shapeError("bce_loss", {f32({4}), f64({4})}),
            "bce_loss target f64[4] does not match prediction f32[4]");
  EXPECT_EQ(shapeError("bce_loss", {i32({4}), i32({4})}),
            "bce_loss expects a floating-point prediction, got i32[4]");
  EXPECT_EQ(shapeError("softmax_cross_entropy_backward", {f32({1}), f32({4, 3}), i32({4})}),
            "softmax_cross_entropy_backward expects a scalar gradient f32[], got f32[1]");
  EXPECT_EQ(shapeError("mse_loss_backward", {f64({}), f32({4}), f32({4})}),
            "mse_loss_backward expects a scalar gradient f32[], got f64[]");
  ir::AttrMap k;
  k.set("k", int64_t{0});
  EXPECT_EQ(shapeError("accuracy", {f32({4, 3}), i32({4})}, k),
            "accuracy k must be at least 1, got 0");
  k.set("k", int64_t{5});
  EXPECT_EQ(shapeError("accuracy", {f32({4, 3}), i32({4})}, k),
            "accuracy k=5 exceeds the 3 classes of f32[4,3]");
  EXPECT_EQ(shapeError("accuracy", {f32({4, Q}), i32({4})}, k), "");
}

TEST(RefLoss, ResultTypes) {
  const ir::OpDef *def = ir::OpTable::get().lookup("softmax_cross_entropy");
  ASSERT_TRUE(def);
  std::vector<TensorType> operands = {f64({ir::kDynamic, 10}), i32({ir::kDynamic})};
  ir::AttrMap attrs;
  attrs.set("ignore_index", int64_t{-100});
  ir::InferCtx ctx{operands, attrs, {}, {}};
  Error e = ir::inferResultTypes(*def, ctx);
  ASSERT_FALSE(e) << e.message();
  EXPECT_EQ(ctx.results, std::vector<TensorType>{f64({})});
  EXPECT_TRUE(def->grad);
  EXPECT_FALSE(ir::OpTable::get().lookup("accuracy")->grad);
  EXPECT_FALSE(ir::OpTable::get().lookup("softmax_cross_entropy_backward")->grad);
}

} // namespace
} // namespace dtnn::test
