// The registries: names kept once with their registrant, a second registration
// of a name refused with a message naming both, and the built-in entries
// registered through the public calls (test/unit/Main.cpp calls
// registerBuiltins). Only failing registrations are tried on the process-wide
// registries, so other tests see them unchanged.
#include "dtnn/Registry.h"

#include "ir/OpTable.h"
#include "ir/Registry.h"
#include "ir/RunSettings.h"
#include "passes/Optimizers.h"
#include "passes/PassRegistry.h"
#include "runtime/BackendRegistry.h"
#include "runtime/KernelRegistry.h"
#include "runtime/train/Schedule.h"
#include "runtime/train/data/Sources.h"

#include <gtest/gtest.h>

namespace dtnn {
namespace {

TEST(Registry, KeepsNamesOnceWithTheirOrigin) {
  ir::Registry<int> r("widget");
  EXPECT_FALSE(r.add("b", "built-in", 1));
  EXPECT_FALSE(r.add("a", "mylib", 2));
  Error e = r.add("b", "otherlib", 3);
  ASSERT_TRUE(e);
  EXPECT_EQ(e.message(),
            "widget 'b' is already registered (by built-in); otherlib cannot register it again");
  EXPECT_EQ(*r.find("b"), 1);
  EXPECT_EQ(r.find("c"), nullptr);
  EXPECT_EQ(r.origin("a"), "mylib");
  EXPECT_EQ(r.origin("c"), "");
  EXPECT_EQ(r.names(), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(r.namesInOrder(), (std::vector<std::string>{"b", "a"}));
}

TEST(Registry, BuiltinsRegisterOnce) {
  EXPECT_FALSE(registerBuiltins());
  EXPECT_FALSE(registerBuiltins());
  EXPECT_EQ(ir::OpTable::get().origin("conv2d"), "built-in");
  EXPECT_EQ(passes::passOrigin("dce"), "built-in");
  EXPECT_EQ(ir::settingChoiceOrigin("optimizer", "sgd"), "built-in");
  EXPECT_EQ(ir::defaultSettingChoice("optimizer"), "sgd");
  EXPECT_EQ(ir::defaultSettingChoice("metrics"), "accuracy");
}

TEST(Registry, DuplicatesNameBothRegistrants) {
  auto message = [](Error e) { return e ? e.message() : "<no error>"; };
  ir::OpDef relu = *ir::OpTable::get().lookup("relu");
  EXPECT_EQ(message(ir::registerOp(relu, "mylib")),
            "op 'relu' is already registered (by built-in); mylib cannot register it again");
  EXPECT_EQ(message(passes::registerPass([] { return passes::createPass("cse"); }, "mylib")),
            "pass 'cse' is already registered (by built-in); mylib cannot register it again");
  EXPECT_EQ(message(passes::registerOptimizer({.name = "adam"}, "mylib")),
            "optimizer 'adam' is already registered (by built-in); mylib cannot register it "
            "again");
  runtime::ScheduleDef step;
  step.name = "step";
  step.build = [](const ir::AttrMap &, double, int64_t)
      -> Expected<std::unique_ptr<runtime::LrSchedule>> { return Error::make("unused"); };
  EXPECT_EQ(message(runtime::registerSchedule(step, "mylib")),
            "schedule 'step' is already registered (by built-in); mylib cannot register it again");
  DataSourceDef mnist;
  mnist.name = "mnist";
  mnist.load = [](const DataSpec &, const std::string &, uint64_t) -> Expected<DataSplits> {
    return Error::make("unused");
  };
  EXPECT_EQ(message(registerDataSource(mnist, "mylib")),
            "data source 'mnist' is already registered (by built-in); mylib cannot register it "
            "again");
  runtime::BackendEntry reference;
  reference.name = "reference";
  reference.create = [](const runtime::BackendOptions &) { return nullptr; };
  reference.origin = "mylib";
  EXPECT_EQ(message(runtime::registerBackend(reference)),
            "backend 'reference' is already registered (by built-in); mylib cannot register it "
            "again");
  runtime::KernelEntry relu32{"relu", "reference", ir::DType::F32, runtime::LayoutKind::Plain,
                              [](const runtime::KernelRequest &)
                                  -> Expected<std::unique_ptr<runtime::Kernel>> {
                                return Error::make("unused");
                              }};
  relu32.origin = "mylib";
  EXPECT_EQ(message(runtime::registerKernel(relu32)),
            "kernel 'relu' of backend 'reference' at 'f32' is already registered (by built-in); "
            "mylib cannot register it again");
}

TEST(Registry, RefusesIncompleteEntries) {
  auto message = [](Error e) { return e ? e.message() : "<no error>"; };
  ir::OpDef shapeless;
  shapeless.name = "shapeless";
  EXPECT_EQ(message(ir::registerOp(shapeless, "mylib")), "op 'shapeless' of mylib has no shape rule");
  EXPECT_EQ(message(passes::registerOptimizer({.name = "nothing"}, "mylib")),
            "optimizer 'nothing' of mylib has no update op 'nothing_update' in the op table");
  EXPECT_EQ(message(ir::registerSettingChoice("batch", {"big"}, "mylib")),
            "mylib registers 'big' for 'batch', which is not a setting that names a choice");
  EXPECT_EQ(message(ir::registerSettingChoice("loss", {"other", {}, "", true}, "mylib")),
            "mylib declares 'other' the default loss, but 'softmax_cross_entropy' already is");
}

} // namespace
} // namespace dtnn
