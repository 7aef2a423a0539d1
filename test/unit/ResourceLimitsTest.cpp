// Tests of the resource-limit checks: OMP_STACKSIZE values, how a need
// prints, the message that refuses it, a plan's estimate, a plan refused under
// a real address-space limit (in a child process) instead of crashing in
// oneDNN, and the limits of open files and threads.
#include "runtime/ResourceLimits.h"

#include "ir/TextParser.h"
#include "runtime/HostMemory.h"
#include "runtime/ModuleRunner.h"

#include <gtest/gtest.h>

#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <sstream>

using namespace dtnn;
using namespace dtnn::runtime;

namespace {

constexpr uint64_t kMiB = uint64_t(1) << 20;

std::unique_ptr<ir::Module> parse(const std::string &text) {
  SourceManager sm;
  std::ostringstream errs;
  DiagnosticEngine diags(sm, errs);
  auto m = ir::parseModule(text, "space.dtir", sm, diags);
  EXPECT_TRUE(m) << errs.str();
  return m;
}

// Two dense layers: oneDNN binds them to generated kernels.
const char *kDense = R"(param @w0 : f32[512,256] init=zeros
param @b0 : f32[512] init=zeros
param @w1 : f32[64,512] init=zeros
param @b1 : f32[64] init=zeros

graph @f(%x: f32[?,256]) -> f32[?,64] {
  %0 = dense %x, @w0, @b0 : f32[?,512]
  %1 = relu %0 : f32[?,512]
  %2 = dense %1, @w1, @b1 : f32[?,64]
  return %2
}
)";
} // namespace

TEST(ResourceLimitsTest, ParsesOpenmpStackSizes) {
  EXPECT_EQ(parseOpenmpStackSize("512"), 512 * uint64_t(1024)) << "K is the default unit";
  EXPECT_EQ(parseOpenmpStackSize("100B"), 100u);
  EXPECT_EQ(parseOpenmpStackSize("16M"), 16 * kMiB);
  EXPECT_EQ(parseOpenmpStackSize(" 4 m "), 4 * kMiB);
  EXPECT_EQ(parseOpenmpStackSize("1g"), uint64_t(1) << 30);
  for (const char *bad : {"", "M", "abc", "4X", "4MB", "-1", "99999999999999999999G"})
    EXPECT_EQ(parseOpenmpStackSize(bad), 0u) << bad;
}

TEST(ResourceLimitsTest, ANeedAddsItsPartsAndLeavesOutEmptyOnes) {
  SpaceNeed need{"the eval step of M at batch 8", {}};
  need.add("its kernels' generated code", 3 * kMiB);
  need.add("its values", 0);
  need.add("its inputs", 512 * 1024);
  EXPECT_EQ(need.parts.size(), 2u);
  EXPECT_EQ(need.total(), 3 * kMiB + 512 * 1024);
  EXPECT_EQ(need.str(), "3.0 MiB for its kernels' generated code, 512.0 KiB for its inputs");
}

TEST(ResourceLimitsTest, ARefusalNamesWhatNeedsHowMuchAndWhatIsLeft) {
  SpaceNeed need{"the eval step of M at batch 8", {}};
  need.add("its kernels' generated code", 6 * kMiB);
  MappingLimit limit{"the address-space limit (ulimit -v)", 200 * kMiB, 100 * kMiB};
  EXPECT_FALSE(checkAddressSpace(need, limit, "or use a smaller batch"));
  EXPECT_FALSE(checkAddressSpace(need, MappingLimit{"none", UINT64_MAX, 0}, ""))
      << "no limit: never refused";
  limit.left = 20 * kMiB;
  need.note = "52.0 MiB of it for the data set";
  Error e = checkAddressSpace(need, limit, "or use a smaller batch");
  ASSERT_TRUE(e);
  EXPECT_EQ(e.message(),
            "the eval step of M at batch 8 needs 30.0 MiB of address space (6.0 MiB for its "
            "kernels' generated code, and 24.0 MiB kept free for the libraries), but the "
            "address-space limit (ulimit -v) of 200.0 MiB leaves 20.0 MiB beside the 180.0 MiB in "
            "use (52.0 MiB of it for the data set); raise the limit, or use a smaller batch");
  // Exactly the need and the margin fit.
  limit.left = 30 * kMiB;
  EXPECT_FALSE(checkAddressSpace(need, limit, ""));
  limit.left = 30 * kMiB - 1;
  EXPECT_TRUE(checkAddressSpace(need, limit, ""));
}

TEST(ResourceLimitsTest, APlanCountsGeneratedCodeOnOnednnOnly) {
  auto m = parse(kDense);
  ASSERT_TRUE(m);
  const ir::Graph &g = *m->findGraph("f");
  for (const char *name : {"onednn", "reference"}) {
    auto backends = BackendSet::create(name, {});
    ASSERT_TRUE(backends) << backends.error().message();
    ModuleRunner runner(*m, *backends);
    EXPECT_TRUE(runner.addressSpaceNeed(g, 16).parts.empty()) << "no plan of @f built yet";
    auto exec = runner.executor(g, 32);
    ASSERT_TRUE(exec) << exec.error().message();
    SpaceNeed need = runner.addressSpaceNeed(g, 16);
    EXPECT_EQ(need.who, "the forward pass of f at batch 16");
    bool code = need.str().find("generated code") != std::string::npos;
    EXPECT_EQ(code, std::string(name) == "onednn") << need.str();
    EXPECT_NE(need.str().find("for its inputs"), std::string::npos) << need.str();
  }
}

TEST(ResourceLimitsTest, StepsAreNamedByTheirGraphs) {
  auto m = parse("graph @M.eval(%x: f32[?,4]) -> f32[?,4] {\n  %0 = relu %x : f32[?,4]\n"
                 "  return %0\n}\n");
  ASSERT_TRUE(m);
  EXPECT_EQ(stepName(*m->findGraph("M.eval")), "the eval step of M");
}

// Under a limit that leaves less than a plan needs, building it is an error
// that names the plan, not a crash inside oneDNN's code generator.
TEST(ResourceLimitsTest, APlanThatDoesNotFitIsRefusedBeforeItsKernelsAreBound) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  auto m = parse(kDense);
  ASSERT_TRUE(m);
  auto backends = BackendSet::create("onednn", {});
  ASSERT_TRUE(backends) << backends.error().message();
  EXPECT_EXIT(
      {
        ModuleRunner runner(*m, *backends);
        const ir::Graph &g = *m->findGraph("f");
        // Room for the margin and a small plan, not for 44 MiB of values. (The
        // generated code's size depends on the CPU: under a MiB with AVX2 only.)
        rlimit rl{};
        getrlimit(RLIMIT_AS, &rl);
        rl.rlim_cur = mappedBytes() + 40 * kMiB;
        if (setrlimit(RLIMIT_AS, &rl) != 0) std::_Exit(2);
        auto big = runner.executor(g, 8192);
        if (big) std::_Exit(3);
        std::fprintf(stderr, "%s\n", big.error().message().c_str());
        auto small = runner.executor(g, 16);
        std::_Exit(small ? 0 : 4);
      },
      ::testing::ExitedWithCode(0),
      "the forward pass of f at batch 8192 needs [0-9.]+ MiB of address space \\([0-9.]+ [KM]iB "
      "for its kernels' generated code, [0-9.]+ [KM]iB for its values.*the address-space limit "
      "\\(ulimit -v\\) of [0-9.]+ MiB leaves [0-9.]+ MiB beside .*; raise the limit, or use a "
      "smaller batch");
}

// What the open-file limit leaves is the limit less the descriptors open.
TEST(ResourceLimitsTest, OpenFilesLeftAreTheLimitLessTheOpenOnes) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        rlimit rl{};
        getrlimit(RLIMIT_NOFILE, &rl);
        uint64_t open = rl.rlim_cur - openFilesLeft();
        rl.rlim_cur = open + 5;
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0) std::_Exit(2);
        if (openFilesLeft() != 5) std::_Exit(3);
        if (checkOpenFiles(5, "it")) std::_Exit(4);
        Error e = checkOpenFiles(20, "starting it");
        std::fprintf(stderr, "%s\n", e ? e.message().c_str() : "");
        std::_Exit(0);
      },
      ::testing::ExitedWithCode(0),
      "starting it needs 20 more open files, but the open-file limit \\(ulimit -n\\) of [0-9]+ "
      "leaves 5; raise the limit");
}
