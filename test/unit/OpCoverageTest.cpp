// Every op of the table has a reference kernel, and every op that a forward
// graph can contain and that passes a gradient has a gradient rule.
#include "backends/reference/KernelTable.h"
#include "ir/OpTable.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace dtnn {
namespace {

bool endsWith(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Ops that never pass a gradient: backward ops (the engine only builds
// first derivatives), optimizer updates, metrics and constants.
bool isNonDifferentiable(const ir::OpDef &def) {
  static const std::set<std::string> others = {"accuracy", "fill", "one_hot", "sum_like",
                                               "reshape_like"};
  return def.name.find("_backward") != std::string::npos || endsWith(def.name, "_update") ||
         others.count(def.name) != 0;
}

TEST(OpCoverage, EveryOpHasAReferenceKernel) {
  for (const ir::OpDef *def : ir::OpTable::get().all())
    EXPECT_NE(reference::KernelTable::get().find(def->name), nullptr)
        << "op '" << def->name << "' has no reference kernel";
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

TEST(OpCoverage, UpdatesHaveSideEffectsAndNoResults) {
  int updates = 0;
  for (const ir::OpDef *def : ir::OpTable::get().all()) {
    if (!endsWith(def->name, "_update")) continue;
    ++updates;
    EXPECT_TRUE(def->hasSideEffects) << def->name;
    EXPECT_EQ(def->numResults, 0u) << def->name;
  }
  EXPECT_EQ(updates, 5); // sgd, adam, adamw, rmsprop, nadam
}

} // namespace
} // namespace dtnn
