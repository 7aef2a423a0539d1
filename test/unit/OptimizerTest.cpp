// Optimizer updates: three steps of every optimizer and option combination
// on the reference backend against torch.optim's update rules written out
// here in double precision; readOptimizer's settings and errors; and the
// state buffers emitUpdate creates.
#include "OptimizerSteps.h"

#include "ir/Builder.h"
#include "ir/OpTable.h"
#include "ir/Printer.h"
#include "passes/Optimizers.h"
#include "runtime/ModuleRunner.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

namespace dtnn::test {
namespace {

using ir::AttrMap;
using ir::AttrValue;
using ir::DType;
using ir::TensorType;

void expectNear(const Vec &got, const Vec &want, double tol, const std::string &what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], tol * (1 + std::abs(want[i]))) << what << "[" << i << "]";
}

// torch.optim.SGD for one element over the three steps.
struct SgdArgs {
  double momentum = 0, dampening = 0, weightDecay = 0;
  bool nesterov = false;
};
Vec sgdReference(const SgdArgs &a) {
  Vec p = kInitial, buf(4, 0.0);
  for (int t = 0; t < 3; ++t)
    for (int i = 0; i < 4; ++i) {
      double d = kGrads[t][i] + a.weightDecay * p[i];
      if (a.momentum != 0) {
        buf[i] = t == 0 ? d : a.momentum * buf[i] + (1 - a.dampening) * d;
        d = a.nesterov ? d + a.momentum * buf[i] : buf[i];
      }
      p[i] -= kLr[t] * d;
    }
  return p;
}

// torch.optim.Adam (decoupled = false) or AdamW (decoupled = true).
struct AdamArgs {
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weightDecay = 0;
  bool decoupled = false, amsgrad = false;
};
Vec adamReference(const AdamArgs &a) {
  Vec p = kInitial, m(4, 0.0), v(4, 0.0), maxV(4, 0.0);
  for (int t = 0; t < 3; ++t) {
    double step = t + 1, lr = kLr[t];
    double bc1 = 1 - std::pow(a.beta1, step), bc2 = 1 - std::pow(a.beta2, step);
    for (int i = 0; i < 4; ++i) {
      double g = kGrads[t][i];
      if (a.decoupled)
        p[i] *= 1 - lr * a.weightDecay;
      else
        g += a.weightDecay * p[i];
      m[i] = a.beta1 * m[i] + (1 - a.beta1) * g;
      v[i] = a.beta2 * v[i] + (1 - a.beta2) * g * g;
      maxV[i] = std::max(maxV[i], v[i]);
      double denom = std::sqrt(a.amsgrad ? maxV[i] : v[i]) / std::sqrt(bc2) + a.eps;
      p[i] -= lr / bc1 * m[i] / denom;
    }
  }
  return p;
}

// torch.optim.RMSprop.
struct RmspropArgs {
  double alpha = 0.99, eps = 1e-8, weightDecay = 0, momentum = 0;
  bool centered = false;
};
Vec rmspropReference(const RmspropArgs &a) {
  Vec p = kInitial, sq(4, 0.0), buf(4, 0.0), gradAvg(4, 0.0);
  for (int t = 0; t < 3; ++t)
    for (int i = 0; i < 4; ++i) {
      double g = kGrads[t][i] + a.weightDecay * p[i];
      sq[i] = a.alpha * sq[i] + (1 - a.alpha) * g * g;
      gradAvg[i] = a.alpha * gradAvg[i] + (1 - a.alpha) * g;
      double avg = std::sqrt(a.centered ? sq[i] - gradAvg[i] * gradAvg[i] : sq[i]) + a.eps;
      if (a.momentum > 0) {
        buf[i] = a.momentum * buf[i] + g / avg;
        p[i] -= kLr[t] * buf[i];
      } else {
        p[i] -= kLr[t] * g / avg;
      }
    }
  return p;
}

// torch.optim.NAdam (PyTorch 2.x: mu_product_next = mu_product * mu_next).
struct NadamArgs {
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weightDecay = 0, momentumDecay = 0.004;
};
Vec nadamReference(const NadamArgs &a, double *muProductOut = nullptr) {
  Vec p = kInitial, m(4, 0.0), v(4, 0.0);
  double muProduct = 1;
  for (int t = 0; t < 3; ++t) {
    double step = t + 1, lr = kLr[t];
    double bc2 = 1 - std::pow(a.beta2, step);
    double mu = a.beta1 * (1 - 0.5 * std::pow(0.96, step * a.momentumDecay));
    double muNext = a.beta1 * (1 - 0.5 * std::pow(0.96, (step + 1) * a.momentumDecay));
    muProduct *= mu;
    double muProductNext = muProduct * muNext;
    for (int i = 0; i < 4; ++i) {
      double g = kGrads[t][i] + a.weightDecay * p[i];
      m[i] = a.beta1 * m[i] + (1 - a.beta1) * g;
      v[i] = a.beta2 * v[i] + (1 - a.beta2) * g * g;
      double denom = std::sqrt(v[i] / bc2) + a.eps;
      p[i] -= lr * (1 - mu) / (1 - muProduct) * g / denom;
      p[i] -= lr * muNext / (1 - muProductNext) * m[i] / denom;
    }
  }
  if (muProductOut) *muProductOut = muProduct;
  return p;
}

constexpr double kTol = 1e-12;

TEST(Optimizer, SgdPlainAndWeightDecay) {
  expectNear(runSteps(config("sgd"))["w"], sgdReference({}), kTol, "sgd");
  expectNear(runSteps(config("sgd", {{"weight_decay", 0.1}}))["w"],
             sgdReference({.weightDecay = 0.1}), kTol, "sgd wd");
  // No state buffers without momentum.
  EXPECT_EQ(runSteps(config("sgd")).size(), 1u);
}

TEST(Optimizer, SgdMomentum) {
  auto out = runSteps(config("sgd", {{"momentum", 0.9}}));
  expectNear(out["w"], sgdReference({.momentum = 0.9}), kTol, "sgd momentum");
  ASSERT_EQ(out.count("w.momentum"), 1u);
  // buf after three steps: g1, then 0.9 buf + g.
  Vec buf(4);
  for (int i = 0; i < 4; ++i) buf[i] = (kGrads[0][i] * 0.9 + kGrads[1][i]) * 0.9 + kGrads[2][i];
  expectNear(out["w.momentum"], buf, kTol, "sgd momentum buffer");
}

// PyTorch starts the buffer at the undampened first gradient.
TEST(Optimizer, SgdDampening) {
  expectNear(runSteps(config("sgd", {{"momentum", 0.9}, {"dampening", 0.5}}))["w"],
             sgdReference({.momentum = 0.9, .dampening = 0.5}), kTol, "sgd dampening");
  expectNear(
      runSteps(config("sgd", {{"momentum", 0.5}, {"dampening", 0.1}, {"weight_decay", 0.2}}))["w"],
      sgdReference({.momentum = 0.5, .dampening = 0.1, .weightDecay = 0.2}), kTol,
      "sgd dampening wd");
}

TEST(Optimizer, SgdNesterov) {
  expectNear(runSteps(config("sgd", {{"momentum", 0.9}, {"nesterov", true}}))["w"],
             sgdReference({.momentum = 0.9, .nesterov = true}), kTol, "sgd nesterov");
  expectNear(
      runSteps(config("sgd", {{"momentum", 0.9}, {"nesterov", true}, {"weight_decay", 0.01}}))["w"],
      sgdReference({.momentum = 0.9, .weightDecay = 0.01, .nesterov = true}), kTol,
      "sgd nesterov wd");
}

TEST(Optimizer, Adam) {
  expectNear(runSteps(config("adam"))["w"], adamReference({}), kTol, "adam");
  expectNear(runSteps(config("adam", {{"weight_decay", 0.1}}))["w"],
             adamReference({.weightDecay = 0.1}), kTol, "adam wd");
  expectNear(runSteps(config("adam", {{"betas", Vec{0.8, 0.99}}, {"eps", 1e-3}}))["w"],
             adamReference({.beta1 = 0.8, .beta2 = 0.99, .eps = 1e-3}), kTol, "adam betas eps");
}

TEST(Optimizer, AdamW) {
  expectNear(runSteps(config("adamw"))["w"],
             adamReference({.weightDecay = 0.01, .decoupled = true}), kTol, "adamw");
  expectNear(runSteps(config("adamw", {{"weight_decay", 0.1}, {"beta1", 0.5}}))["w"],
             adamReference({.beta1 = 0.5, .weightDecay = 0.1, .decoupled = true}), kTol,
             "adamw wd");
  expectNear(runSteps(config("adamw", {{"weight_decay", int64_t{0}}}))["w"], adamReference({}),
             kTol, "adamw without decay");
}

TEST(Optimizer, Rmsprop) {
  auto plain = runSteps(config("rmsprop"));
  expectNear(plain["w"], rmspropReference({}), kTol, "rmsprop");
  EXPECT_EQ(plain.count("w.momentum"), 0u);
  auto withMomentum = runSteps(config("rmsprop", {{"momentum", 0.9}}));
  expectNear(withMomentum["w"], rmspropReference({.momentum = 0.9}), kTol, "rmsprop momentum");
  EXPECT_EQ(withMomentum.count("w.momentum"), 1u);
  expectNear(runSteps(config("rmsprop", {{"momentum", 0.5}, {"weight_decay", 0.1}}))["w"],
             rmspropReference({.weightDecay = 0.1, .momentum = 0.5}), kTol, "rmsprop wd");
  expectNear(runSteps(config("rmsprop", {{"alpha", 0.9}, {"eps", 1e-4}}))["w"],
             rmspropReference({.alpha = 0.9, .eps = 1e-4}), kTol, "rmsprop alpha eps");
}

// beta2 = 0.5 lets v fall between steps, so the largest v differs from v.
TEST(Optimizer, Amsgrad) {
  Vec want = adamReference({.beta2 = 0.5, .amsgrad = true});
  ASSERT_GT(std::abs(want[0] - adamReference({.beta2 = 0.5})[0]), 1e-6)
      << "the case must exercise the maximum";
  auto out = runSteps(config("adam", {{"amsgrad", true}, {"beta2", 0.5}}));
  expectNear(out["w"], want, kTol, "adam amsgrad");
  EXPECT_EQ(out.count("w.adam_max_v"), 1u);
  EXPECT_EQ(runSteps(config("adam")).count("w.adam_max_v"), 0u);
  expectNear(runSteps(config("adamw", {{"amsgrad", true}, {"beta2", 0.5}}))["w"],
             adamReference({.beta2 = 0.5, .weightDecay = 0.01, .decoupled = true,
                            .amsgrad = true}),
             kTol, "adamw amsgrad");
  expectNear(runSteps(config("adam", {{"amsgrad", true}, {"beta2", 0.5}}), DType::F32)["w"], want,
             1e-5, "adam amsgrad f32");
}

TEST(Optimizer, RmspropCentered) {
  Vec want = rmspropReference({.centered = true});
  ASSERT_GT(std::abs(want[0] - rmspropReference({})[0]), 1e-6);
  auto out = runSteps(config("rmsprop", {{"centered", true}}));
  expectNear(out["w"], want, kTol, "rmsprop centered");
  EXPECT_EQ(out.count("w.grad_avg"), 1u);
  EXPECT_EQ(out.count("w.momentum"), 0u);
  auto both = runSteps(config("rmsprop", {{"centered", true}, {"momentum", 0.9}}));
  expectNear(both["w"], rmspropReference({.momentum = 0.9, .centered = true}), kTol,
             "rmsprop centered momentum");
  EXPECT_EQ(both.count("w.grad_avg") + both.count("w.momentum"), 2u);
  expectNear(runSteps(config("rmsprop", {{"centered", true}, {"momentum", 0.9}}), DType::F32)["w"],
             rmspropReference({.momentum = 0.9, .centered = true}), 1e-5,
             "rmsprop centered f32");
}

TEST(Optimizer, Nadam) {
  double muProduct = 0;
  Vec want = nadamReference({}, &muProduct);
  auto out = runSteps(config("nadam"));
  expectNear(out["w"], want, kTol, "nadam");
  expectNear(out["w.mu_product"], {muProduct}, kTol, "nadam mu_product");
  expectNear(runSteps(config("nadam", {{"weight_decay", 0.1}}))["w"],
             nadamReference({.weightDecay = 0.1}), kTol, "nadam wd");
  expectNear(runSteps(config("nadam", {{"momentum_decay", 0.01}, {"beta2", 0.99}}))["w"],
             nadamReference({.beta2 = 0.99, .momentumDecay = 0.01}), kTol, "nadam decay");
}

// The f32 kernels follow the same rules to single precision.
TEST(Optimizer, SinglePrecision) {
  expectNear(runSteps(config("sgd", {{"momentum", 0.9}, {"nesterov", true}}), DType::F32)["w"],
             sgdReference({.momentum = 0.9, .nesterov = true}), 1e-6, "sgd f32");
  expectNear(runSteps(config("adam"), DType::F32)["w"], adamReference({}), 1e-5, "adam f32");
  expectNear(runSteps(config("adamw"), DType::F32)["w"],
             adamReference({.weightDecay = 0.01, .decoupled = true}), 1e-5, "adamw f32");
  expectNear(runSteps(config("rmsprop", {{"momentum", 0.9}}), DType::F32)["w"],
             rmspropReference({.momentum = 0.9}), 1e-5, "rmsprop f32");
  expectNear(runSteps(config("nadam"), DType::F32)["w"], nadamReference({}), 1e-5, "nadam f32");
}

// The message readOptimizer gives for `settings`, or "" when it accepts them.
std::string readError(const ir::SettingCall &settings) {
  auto spec = passes::readOptimizer(settings);
  return spec ? "" : spec.error().message();
}

TEST(Optimizer, ReadSettings) {
  std::vector<std::string> names;
  for (const ir::SettingChoice &c : ir::findRunSetting("optimizer")->choices())
    names.push_back(c.name);
  EXPECT_EQ(names, (std::vector<std::string>{"sgd", "adam", "adamw", "rmsprop", "nadam"}));
  auto spec = passes::readOptimizer(config(
      "sgd", {{"lr", 0.01}, {"momentum", 0.9}, {"nesterov", true}, {"weight_decay", int64_t{0}}}));
  ASSERT_TRUE(spec) << spec.error().message();
  EXPECT_EQ(spec->name, "sgd");
  EXPECT_EQ(spec->args.getFloat("momentum"), 0.9);
  EXPECT_EQ(spec->args.getFloat("dampening"), 0.0);
  EXPECT_TRUE(spec->args.getBool("nesterov"));
  EXPECT_EQ(spec->args.getFloat("weight_decay"), 0.0);
  EXPECT_EQ(spec->args.find("lr"), nullptr);
  // Defaults as PyTorch's.
  spec = passes::readOptimizer(config("adamw"));
  ASSERT_TRUE(spec);
  EXPECT_EQ(spec->args.getFloat("beta1"), 0.9);
  EXPECT_EQ(spec->args.getFloat("beta2"), 0.999);
  EXPECT_EQ(spec->args.getFloat("eps"), 1e-8);
  EXPECT_EQ(spec->args.getFloat("weight_decay"), 0.01);
  spec = passes::readOptimizer(config("nadam", {{"betas", std::vector<int64_t>{0, 0}}}));
  ASSERT_TRUE(spec);
  EXPECT_EQ(spec->args.getFloat("beta1"), 0.0);
  EXPECT_EQ(spec->args.getFloat("momentum_decay"), 0.004);
  spec = passes::readOptimizer(config("rmsprop"));
  ASSERT_TRUE(spec);
  EXPECT_EQ(spec->args.getFloat("alpha"), 0.99);
  // Without an optimizer setting the choice is plain SGD.
  spec = passes::readOptimizer(ir::RunSettings().optimizer);
  ASSERT_TRUE(spec);
  EXPECT_EQ(spec->name, "sgd");
  EXPECT_EQ(spec->args.getFloat("momentum"), 0.0);
}

TEST(Optimizer, ReadErrors) {
  EXPECT_EQ(readError(config("adm")), "unknown optimizer 'adm'; did you mean 'adam'? "
                                      "(known optimizers: sgd, adam, adamw, rmsprop, nadam)");
  EXPECT_EQ(readError(config("lbfgs")),
            "unknown optimizer 'lbfgs' (known optimizers: sgd, adam, adamw, rmsprop, nadam)");
  EXPECT_EQ(readError(config("sgd", {{"momentun", 0.9}})),
            "optimizer 'sgd' has no argument 'momentun'; did you mean 'momentum'? (arguments: "
            "lr, momentum, dampening, nesterov, weight_decay)");
  EXPECT_EQ(readError(config("nadam", {{"amsgrad", true}})),
            "optimizer 'nadam' has no argument 'amsgrad' (arguments: lr, betas, beta1, "
            "beta2, eps, weight_decay, momentum_decay)");
  EXPECT_EQ(readError(config("adam", {{"amsgrad", 1.0}})),
            "optimizer 'adam' argument 'amsgrad' must be true or false, got 1.0");
  EXPECT_EQ(readError(config("rmsprop", {{"betas", Vec{0.9, 0.99}}})),
            "optimizer 'rmsprop' has no argument 'betas' (arguments: lr, alpha, eps, "
            "weight_decay, momentum, centered)");
  EXPECT_EQ(readError(config("sgd", {{"nesterov", int64_t{1}}, {"momentum", 0.9}})),
            "optimizer 'sgd' argument 'nesterov' must be true or false, got 1");
  EXPECT_EQ(readError(config("sgd", {{"momentum", std::string("high")}})),
            "optimizer 'sgd' argument 'momentum' must be a number, got \"high\"");
  EXPECT_EQ(readError(config("adam", {{"betas", Vec{0.9}}})),
            "optimizer 'adam' argument 'betas' must be a list of two numbers, got [0.9]");
  EXPECT_EQ(readError(config("adam", {{"betas", Vec{0.9, 0.99}}, {"beta1", 0.5}})),
            "optimizer adam takes either betas or beta1 and beta2, not both");
}

TEST(Optimizer, ReadValueErrors) {
  EXPECT_EQ(readError(config("sgd", {{"momentum", -0.5}})),
            "sgd_update momentum must be finite and at least 0, got -0.5");
  EXPECT_EQ(readError(config("sgd", {{"weight_decay", -1e-4}})),
            "sgd_update weight_decay must be finite and at least 0, got -1e-04");
  EXPECT_EQ(readError(config("sgd", {{"nesterov", true}})),
            "sgd_update nesterov needs a momentum above 0 and dampening 0");
  EXPECT_EQ(readError(config("sgd", {{"nesterov", true}, {"momentum", 0.9}, {"dampening", 0.1}})),
            "sgd_update nesterov needs a momentum above 0 and dampening 0");
  EXPECT_EQ(readError(config("adam", {{"beta1", 1.0}})),
            "adam_update beta1 must be in [0, 1), got 1.0");
  EXPECT_EQ(readError(config("adamw", {{"betas", Vec{0.9, -0.1}}})),
            "adamw_update beta2 must be in [0, 1), got -0.1");
  EXPECT_EQ(readError(config("adam", {{"eps", 0.0}})),
            "adam_update eps must be finite and positive, got 0.0");
  EXPECT_EQ(readError(config("nadam", {{"eps", -1e-8}})),
            "nadam_update eps must be finite and positive, got -1e-08");
  EXPECT_EQ(readError(config("nadam", {{"momentum_decay", int64_t{-1}}})),
            "nadam_update momentum_decay must be finite and at least 0, got -1.0");
  EXPECT_EQ(readError(config("rmsprop", {{"alpha", 1.5}})),
            "rmsprop_update alpha must be in [0, 1], got 1.5");
  EXPECT_EQ(readError(config("rmsprop", {{"momentum", -0.1}})),
            "rmsprop_update momentum must be finite and at least 0, got -0.1");
  EXPECT_EQ(readError(config("sgd", {{"momentum", std::nan("")}})),
            "sgd_update momentum must be finite and at least 0, got nan");
}

// A module with parameter @conv2d.0.weight : f32[2,3] and a graph holding
// its update by `settings`; returns the printed module.
std::string printUpdate(const ir::SettingCall &settings) {
  auto spec = passes::readOptimizer(settings);
  EXPECT_TRUE(spec) << spec.error().message();
  if (!spec) return "";
  ir::Module m;
  TensorType type(DType::F32, {2, 3});
  ir::Param *w = m.addParam("conv2d.0.weight", type, "he_uniform", true);
  ir::Graph *g = m.addGraph("train");
  ir::Value *grad = g->addInput("g", type);
  ir::Value *lr = g->addInput("lr", TensorType(DType::F32, {}));
  ir::Value *step = g->addInput("step", TensorType(DType::I64, {}));
  ir::Builder b(*g);
  Error e = passes::emitUpdate(m, b, *spec, *w, grad, lr, step);
  EXPECT_FALSE(e) << e.message();
  g->setOutputs({});
  return ir::printModule(m);
}

TEST(Optimizer, EmitUpdateBuffers) {
  std::string sgd = printUpdate(config("sgd", {{"momentum", 0.9}}));
  EXPECT_NE(sgd.find("buffer @conv2d.0.weight.momentum : f32[2,3] init=zeros"), std::string::npos)
      << sgd;
  EXPECT_NE(sgd.find("%0, %1 = sgd_update @conv2d.0.weight, %g, %lr, %step, "
                     "@conv2d.0.weight.momentum {momentum=0.9} : f32[2,3], f32[2,3]"),
            std::string::npos)
      << sgd;
  std::string plain = printUpdate(config("sgd"));
  EXPECT_EQ(plain.find("buffer @"), std::string::npos) << plain;
  EXPECT_NE(plain.find("%0 = sgd_update @conv2d.0.weight, %g, %lr : f32[2,3]\n"), std::string::npos) << plain;

  std::string adam = printUpdate(config("adam"));
  EXPECT_NE(adam.find("buffer @conv2d.0.weight.adam_m : f32[2,3] init=zeros"), std::string::npos);
  EXPECT_NE(adam.find("buffer @conv2d.0.weight.adam_v : f32[2,3] init=zeros"), std::string::npos);
  EXPECT_NE(adam.find("%0, %1, %2 = adam_update @conv2d.0.weight, %g, %lr, %step, "
                      "@conv2d.0.weight.adam_m, @conv2d.0.weight.adam_v : f32[2,3], f32[2,3], "
                      "f32[2,3]\n"),
            std::string::npos)
      << adam;

  std::string rms = printUpdate(config("rmsprop", {{"momentum", 0.5}}));
  EXPECT_NE(rms.find("buffer @conv2d.0.weight.square_avg : f32[2,3] init=zeros"),
            std::string::npos);
  EXPECT_NE(rms.find("rmsprop_update @conv2d.0.weight, %g, %lr, @conv2d.0.weight.square_avg, "
                     "@conv2d.0.weight.momentum {momentum=0.5}"),
            std::string::npos)
      << rms;

  std::string nadam = printUpdate(config("nadam"));
  EXPECT_NE(nadam.find("buffer @conv2d.0.weight.mu_product : f32[] init=ones"), std::string::npos)
      << nadam;
  EXPECT_NE(nadam.find("nadam_update @conv2d.0.weight, %g, %lr, %step, @conv2d.0.weight.adam_m, "
                       "@conv2d.0.weight.adam_v, @conv2d.0.weight.mu_product : f32[2,3], "
                       "f32[2,3], f32[2,3], f32[]\n"),
            std::string::npos)
      << nadam;
}

TEST(Optimizer, EmitUpdateReusesAndRejects) {
  auto spec = passes::readOptimizer(config("adam"));
  ASSERT_TRUE(spec);
  ir::Module m;
  TensorType type(DType::F32, {3});
  ir::Param *w = m.addParam("w", type, "zeros", true);
  ir::Param *v = m.addParam("v", type, "zeros", true);
  ir::Graph *g = m.addGraph("train");
  ir::Value *grad = g->addInput("g", type);
  ir::Value *lr = g->addInput("lr", TensorType(DType::F32, {}));
  ir::Value *step = g->addInput("step", TensorType(DType::I64, {}));
  ir::Builder b(*g);
  ASSERT_FALSE(passes::emitUpdate(m, b, *spec, *w, grad, lr, step));
  // A second update of the same parameter shares its state.
  ASSERT_FALSE(passes::emitUpdate(m, b, *spec, *w, grad, lr, step));
  EXPECT_EQ(m.params().size(), 4u);
  EXPECT_EQ(g->ops().size(), 2u);

  // A clashing parameter name, a wrong gradient type, a missing step.
  m.addParam("v.adam_m", TensorType(DType::F32, {4}), "zeros", false);
  Error e = passes::emitUpdate(m, b, *spec, *v, grad, lr, step);
  EXPECT_EQ(e.message(), "optimizer update of @v: state buffer @v.adam_m : f32[3] init=zeros "
                         "clashes with an existing parameter @v.adam_m : f32[4] init=zeros");
  ir::Value *wrong = g->addInput("g2", TensorType(DType::F32, {4}));
  e = passes::emitUpdate(m, b, *spec, *w, wrong, lr, step);
  EXPECT_EQ(e.message(),
            "optimizer update of @w: adam_update grad f32[4] does not match param f32[3]");
  e = passes::emitUpdate(m, b, *spec, *w, grad, lr, nullptr);
  EXPECT_EQ(e.message(), "optimizer update of @w: adam needs the step count");
  EXPECT_EQ(m.params().size(), 5u);
  EXPECT_EQ(g->ops().size(), 2u);
}

// A spec built by hand gets the update op's defaults.
TEST(Optimizer, EmitUpdateFillsDefaults) {
  ir::Module m;
  TensorType type(DType::F64, {2});
  ir::Param *w = m.addParam("w", type, "zeros", true);
  ir::Graph *g = m.addGraph("train");
  ir::Builder b(*g);
  Error e =
      passes::emitUpdate(m, b, passes::OptimizerSpec{"rmsprop", {}}, *w, g->addInput("g", type),
                         g->addInput("lr", TensorType(DType::F64, {})), nullptr);
  ASSERT_FALSE(e) << e.message();
  ASSERT_EQ(g->ops().size(), 1u);
  EXPECT_EQ(g->ops()[0]->attrs().getFloat("alpha"), 0.99);
  EXPECT_EQ(g->ops()[0]->operands().size(), 4u);
}

// Shape rules of update ops written by hand.
TEST(Optimizer, UpdateShapeRules) {
  auto check = [](const std::string &op, std::vector<TensorType> operands, AttrMap attrs = {}) {
    const ir::OpDef *def = ir::OpTable::get().lookup(op);
    if (!def) return "no op " + op;
    ir::fillDefaultAttrs(*def, attrs);
    ir::InferCtx ctx{operands, attrs, {}, {}};
    return ir::inferResultTypes(*def, ctx).message();
  };
  TensorType p(DType::F32, {3}), f32s(DType::F32, {}), i64s(DType::I64, {});
  EXPECT_EQ(check("sgd_update", {p, p, f32s}), "");
  EXPECT_TRUE(ir::OpTable::get().lookup("sgd_update")->writesOperands());
  EXPECT_EQ(ir::OpTable::get().lookup("adam_update")->numResults, 0u);
  AttrMap momentum;
  momentum.set("momentum", 0.9);
  EXPECT_EQ(check("sgd_update", {p, p, f32s}, momentum),
            "sgd_update with these attributes takes 5 operands (param, grad, lr, step, "
            "momentum_buf), got 3");
  EXPECT_EQ(check("sgd_update", {p, p, f32s, i64s, p}),
            "sgd_update with these attributes takes 3 operands (param, grad, lr), got 5");
  EXPECT_EQ(check("sgd_update", {p, p, TensorType(DType::F32, {1})}),
            "sgd_update lr must be a scalar f32[] or f64[], got f32[1]");
  EXPECT_EQ(check("adam_update", {p, p, f32s, TensorType(DType::I32, {}), p, p}),
            "adam_update step must be a scalar i64[], got i32[]");
  EXPECT_EQ(check("adam_update", {p, p, TensorType(DType::F64, {}), i64s, p, p}), "");
  EXPECT_EQ(check("adamw_update", {p, p, f32s, i64s, p, TensorType(DType::F64, {3})}),
            "adamw_update v must be f32[3] to match param f32[3], got f64[3]");
  EXPECT_EQ(check("nadam_update", {p, p, f32s, i64s, p, p, p}),
            "nadam_update mu_product must be f32[] to match param f32[3], got f32[3]");
  EXPECT_EQ(check("rmsprop_update", {TensorType(DType::I32, {3}), TensorType(DType::I32, {3}), f32s,
                                     TensorType(DType::I32, {3})}),
            "rmsprop_update expects a floating-point param, got i32[3]");
}

} // namespace
} // namespace dtnn::test
