// fuse-updates against the update ops it replaces: three steps of SGD (with
// and without momentum, dampening, Nesterov and weight decay), Adam and
// AdamW, updating parameters of 4, 1, 37 and 70000 elements (none a
// multiple of a vector width; the last spans several of the jit's chunks),
// in f64 and f32. The fused_update runs on the jit (the default backend's
// run) and on the reference interpreter; both give the same bits as the
// reference kernels of the unfused updates, whose arithmetic the fused form
// repeats in the same order.
#include "OptimizerSteps.h"

#include <gtest/gtest.h>

namespace dtnn::test {
namespace {

const std::vector<int64_t> kExtra = {1, 37, 70000};

void expectSameBits(const ir::SettingCall &settings, const std::string &what) {
  for (ir::DType dt : {ir::DType::F64, ir::DType::F32}) {
    auto want = runSteps(settings, dt, {"reference", false, kExtra});
    auto jit = runSteps(settings, dt, {"onednn", true, kExtra});
    auto interpreted = runSteps(settings, dt, {"reference", true, kExtra});
    ASSERT_FALSE(want.empty()) << what;
    EXPECT_EQ(jit.size(), want.size()) << what;
    for (const auto &[name, values] : want) {
      std::string where = what + " " + std::string(ir::dtypeName(dt)) + " @" + name;
      EXPECT_EQ(jit[name], values) << where << " on the jit";
      EXPECT_EQ(interpreted[name], values) << where << " on the reference interpreter";
    }
  }
}

TEST(FusedUpdate, Sgd) {
  expectSameBits(config("sgd"), "sgd");
  expectSameBits(config("sgd", {{"weight_decay", 0.1}}), "sgd wd");
}

TEST(FusedUpdate, SgdMomentum) {
  expectSameBits(config("sgd", {{"momentum", 0.9}}), "sgd momentum");
  expectSameBits(config("sgd", {{"momentum", 0.5}, {"dampening", 0.1}, {"weight_decay", 0.2}}),
                 "sgd dampening wd");
  expectSameBits(config("sgd", {{"momentum", 0.9}, {"nesterov", true}, {"weight_decay", 0.01}}),
                 "sgd nesterov wd");
}

TEST(FusedUpdate, Adam) {
  expectSameBits(config("adam"), "adam");
  expectSameBits(config("adam", {{"weight_decay", 0.1}, {"betas", Vec{0.8, 0.99}}}), "adam wd");
  expectSameBits(config("adamw"), "adamw");
  expectSameBits(config("adamw", {{"weight_decay", int64_t{0}}}), "adamw without decay");
}

} // namespace
} // namespace dtnn::test
