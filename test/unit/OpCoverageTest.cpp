// Every op of the table has a reference kernel, and every op that a forward
// graph can contain and that passes a gradient has a gradient rule.
#include "ir/OpTable.h"
#include "runtime/KernelRegistry.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace dtnn {
namespace {

bool endsWith(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Ops that never pass a gradient: backward ops (the engine only builds
// first derivatives), optimizer updates, metrics, constants, encodings of
// integer inputs (one_hot, normalize), and the rewrites that passes place
// after autodiff (batchnorm_fold, fused, moving_average).
bool isNonDifferentiable(const ir::OpDef &def) {
  static const std::set<std::string> others = {
      "accuracy",       "fill",           "one_hot",       "sum_like",
      "reshape_like",   "allreduce_start", "allreduce_wait", "batchnorm_fold", "fused",
      "moving_average", "rank_count",     "normalize"};
  return def.name.find("_backward") != std::string::npos || endsWith(def.name, "_update") ||
         endsWith(def.name, "_coefficients") || others.count(def.name) != 0;
}

// The reference backend is every run's fallback, so it registers a kernel
// for every op at every element type.
TEST(OpCoverage, EveryOpHasAReferenceKernel) {
  std::set<std::pair<std::string, ir::DType>> registered;
  for (const runtime::KernelEntry *e : runtime::KernelRegistry::get().all())
    if (e->backend == "reference") registered.insert({e->op, e->dtype});
  for (const ir::OpDef *def : ir::OpTable::get().all())
    for (ir::DType t : {ir::DType::F32, ir::DType::F64, ir::DType::I32, ir::DType::Token})
      EXPECT_TRUE(registered.count({def->name, t}))
          << "op '" << def->name << "' has no reference kernel for " << ir::dtypeName(t);
}

TEST(OpCoverage, EveryDifferentiableOpHasAGradientRule) {
  for (const ir::OpDef *def : ir::OpTable::get().all()) {
    if (isNonDifferentiable(*def)) continue;
    EXPECT_TRUE(static_cast<bool>(def->grad)) << "op '" << def->name << "' has no gradient rule";
  }
}

TEST(OpCoverage, TrainFormsExistAndAreDifferentiable) {
  for (const ir::OpDef *def : ir::OpTable::get().all()) {
    if (def->trainForm.empty()) continue;
    const ir::OpDef *train = ir::OpTable::get().lookup(def->trainForm);
    ASSERT_NE(train, nullptr) << def->name << " names unknown train form " << def->trainForm;
    EXPECT_TRUE(static_cast<bool>(train->grad)) << def->trainForm << " has no gradient rule";
    EXPECT_GE(train->operands.size(), def->operands.size());
  }
}

// Update ops have no results of their own: they yield the new versions of
// the parameter and state they write, so no pass may treat them as pure.
TEST(OpCoverage, UpdatesWriteTheirParameterAndYieldOnlyVersions) {
  int updates = 0;
  for (const ir::OpDef *def : ir::OpTable::get().all()) {
    if (!endsWith(def->name, "_update")) continue;
    ++updates;
    EXPECT_EQ(def->numResults, 0u) << def->name;
    EXPECT_TRUE(def->operands[0].writes()) << def->name;
    EXPECT_FALSE(def->pure()) << def->name;
  }
  EXPECT_EQ(updates, 6); // sgd, adam, adamw, rmsprop, nadam, and fused_update
}

// Exactly the ops that write in place, draw random numbers or communicate
// are impure; an op's result count adds one version per written operand.
TEST(OpCoverage, EffectsAndResultCounts) {
  const ir::OpTable &t = ir::OpTable::get();
  for (const ir::OpDef *def : t.all()) {
    bool writes = false;
    for (const ir::OperandSpec &o : def->operands) writes |= o.writes();
    EXPECT_EQ(def->pure(), !writes && !def->random && !def->collective) << def->name;
    if (!writes && def->minOperands() < def->maxOperands()) {
      EXPECT_EQ(def->resultCount(def->minOperands()), def->numResults) << def->name;
    }
  }
  EXPECT_TRUE(t.lookup("dropout")->random);
  EXPECT_TRUE(t.lookup("dropout_train")->random);
  EXPECT_FALSE(t.lookup("dropout")->pure());
  EXPECT_TRUE(t.lookup("relu")->pure());
  EXPECT_EQ(t.lookup("batchnorm_train")->resultCount(5), 5u); // y, mean, invstd, two versions
  EXPECT_EQ(t.lookup("sgd_update")->resultCount(3), 1u);      // param
  ir::AttrMap momentum;
  momentum.set("momentum", 0.9);
  EXPECT_EQ(t.lookup("sgd_update")->resultCount(5, momentum), 2u); // param, momentum_buf
}

// Roles and visibility are declared in the op table; the naming conventions must agree with
// them: every gradient op, update op and training form is internal, and the ops a .dtnn model
// calls (layers, activations, losses) are not.
TEST(OpCoverage, RolesAndVisibilityAreDeclared) {
  const ir::OpTable &t = ir::OpTable::get();
  for (const ir::OpDef *def : t.all()) {
    const std::string &n = def->name;
    if (n.ends_with("_backward") || n.ends_with("_backward_frozen")) {
      EXPECT_EQ(def->role, ir::OpRole::Backward) << n;
      EXPECT_TRUE(def->internal) << n;
    }
    if (n.ends_with("_update")) {
      EXPECT_EQ(def->role, ir::OpRole::Update) << n;
      EXPECT_TRUE(def->internal) << n;
    }
    if (n.ends_with("_train")) {
      EXPECT_TRUE(def->internal) << n;
    }
    if (!def->trainForm.empty()) {
      EXPECT_TRUE(t.lookup(def->trainForm)->internal) << n;
    }
  }
  for (const char *n : {"fill", "sum_like", "reshape_like", "allreduce_start",
                        "allreduce_wait", "batchnorm_fold"})
    EXPECT_TRUE(t.lookup(n)->internal) << n;
  for (const char *n : {"conv2d", "dense", "relu", "batchnorm", "dropout", "drop_path", "concat",
                        "softmax_cross_entropy", "accuracy", "scale", "slice", "broadcast_like",
                        "matmul", "scaled_dot_product_attention"})
    EXPECT_FALSE(t.lookup(n)->internal) << n;
  EXPECT_EQ(t.lookup("softmax_cross_entropy")->role, ir::OpRole::Metric);
  EXPECT_EQ(t.lookup("accuracy")->role, ir::OpRole::Metric);
  EXPECT_EQ(t.lookup("relu")->role, ir::OpRole::Forward);
}

// Update ops bind their operands by the layout their attributes give; other
// ops, and operand counts that do not fit the attributes, fill optional
// operands in order and variadic ones with the rest.
TEST(OpCoverage, OperandSpecsFollowTheAttributes) {
  auto names = [](const std::string &op, size_t n, ir::AttrMap attrs = {}) {
    std::string s;
    for (const ir::OperandSpec *o : ir::OpTable::get().lookup(op)->operandSpecs(n, attrs))
      s += (s.empty() ? "" : ",") + o->name + (o->writes() ? "!" : "");
    return s;
  };
  EXPECT_EQ(names("sgd_update", 3), "param!,grad,lr");
  EXPECT_EQ(names("sgd_update", 4), "param!,grad,lr,step");
  EXPECT_EQ(names("sgd_update", 5), "param!,grad,lr,step,momentum_buf!");
  EXPECT_EQ(names("rmsprop_update", 4), "param!,grad,lr,square_avg!");
  EXPECT_EQ(names("rmsprop_update", 5), "param!,grad,lr,square_avg!,momentum_buf!");
  ir::AttrMap centered;
  centered.set("centered", true);
  EXPECT_EQ(names("rmsprop_update", 5, centered), "param!,grad,lr,square_avg!,grad_avg!");
  centered.set("momentum", 0.9);
  EXPECT_EQ(names("rmsprop_update", 6, centered),
            "param!,grad,lr,square_avg!,momentum_buf!,grad_avg!");
  ir::AttrMap amsgrad;
  amsgrad.set("amsgrad", true);
  EXPECT_EQ(names("adam_update", 7, amsgrad), "param!,grad,lr,step,m!,v!,max_v!");
  EXPECT_EQ(names("concat", 3), "inputs,inputs,inputs");
  EXPECT_EQ(names("relu", 1), "x");
}

} // namespace
} // namespace dtnn
